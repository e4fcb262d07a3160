// Runs work off the GUI thread (Qt's global thread pool) and hands its result back on the GUI thread.
// Exceptions become an error text: a bad store or file shows a message, never a crash.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <type_traits>

namespace pkbw::app {

template <class T>
struct Loaded {
    T value{};
    QString error; // empty on success
    bool ok() const { return error.isEmpty(); }
};

// `done(Loaded<R>)` runs on `context`'s thread, and not at all if `context` is destroyed first.
template <class Work, class Done>
void run_in_background(QObject* context, Work work, Done done) {
    using R = std::invoke_result_t<Work>;
    auto* watcher = new QFutureWatcher<Loaded<R>>(context);
    QObject::connect(watcher, &QFutureWatcherBase::finished, context, [watcher, done]() mutable {
        done(watcher->result());
        watcher->deleteLater();
    });
    watcher->setFuture(QtConcurrent::run([work = std::move(work)]() mutable -> Loaded<R> {
        Loaded<R> result;
        try {
            result.value = work();
        } catch (const std::exception& e) {
            result.error = QString::fromUtf8(e.what());
        } catch (...) {
            result.error = QStringLiteral("unknown error");
        }
        return result;
    }));
}

} // namespace pkbw::app
