#include "problemcatalog.h"

#include "pkbw/core/protocol.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTimer>
#include <algorithm>

namespace pkbw::app {

QStringList ProblemCatalog::stems() const {
    QStringList out;
    for (const ProblemEntry& p : problems) {
        out << p.stem;
    }
    return out;
}

const ProblemEntry* ProblemCatalog::find(const QString& stem) const {
    for (const ProblemEntry& p : problems) {
        if (p.stem == stem) {
            return &p;
        }
    }
    return nullptr;
}

QString ProblemCatalog::problems_root() const {
    for (const ProblemEntry& p : problems) {
        if (!p.folder.isEmpty()) {
            return QFileInfo(p.folder).path();
        }
    }
    return {};
}

ProblemCatalog parse_problem_catalog(const QByteArray& json) {
    ProblemCatalog catalog;
    // pkbw prints one JSON object per line ({"event":"problem", ...}, docs/cli.md); older pkbw printed
    // one JSON array. Both are read.
    QJsonParseError parse{};
    QJsonArray list;
    const QJsonDocument document = QJsonDocument::fromJson(json, &parse);
    if (parse.error == QJsonParseError::NoError && document.isArray()) {
        list = document.array();
    } else {
        int line_number = 0;
        for (const QByteArray& line : json.split('\n')) {
            ++line_number;
            if (line.trimmed().isEmpty()) {
                continue;
            }
            QJsonParseError line_parse{};
            const QJsonDocument one = QJsonDocument::fromJson(line, &line_parse);
            if (line_parse.error != QJsonParseError::NoError || !one.isObject()) {
                catalog.error =
                    QObject::tr("the problem list is neither a JSON array nor JSON lines (line %1: %2)")
                        .arg(line_number)
                        .arg(line_parse.errorString());
                return catalog;
            }
            const QJsonObject o = one.object();
            const QLatin1String problem_event(protocol::kProblem.data(), protocol::kProblem.size());
            if (o.value(QStringLiteral("event")).toString(problem_event) == problem_event) {
                list.append(o);
            }
        }
    }
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QJsonObject o = list.at(i).toObject();
        ProblemEntry entry;
        entry.id = o.value(QStringLiteral("id")).toInt();
        entry.stem = o.value(QStringLiteral("stem")).toString();
        if (entry.id <= 0 || entry.stem.isEmpty()) {
            catalog.error = QObject::tr("problem list entry %1 has no id or stem").arg(i);
            break;
        }
        entry.title = o.value(QStringLiteral("title")).toString();
        entry.category = o.value(QStringLiteral("category")).toString();
        entry.description = o.value(QStringLiteral("description")).toString();
        entry.folder = o.value(QStringLiteral("folder")).toString();
        const QJsonObject files = o.value(QStringLiteral("files")).toObject();
        entry.readme = files.value(QStringLiteral("README.md")).toString();
        entry.reference_cuda = files.value(QStringLiteral("reference.cu")).toString();
        entry.reference_host = files.value(QStringLiteral("reference_host.cpp")).toString();
        catalog.problems.push_back(entry);
    }
    std::stable_sort(catalog.problems.begin(), catalog.problems.end(),
                     [](const ProblemEntry& a, const ProblemEntry& b) { return a.id < b.id; });
    return catalog;
}

ProblemCatalogLoader::ProblemCatalogLoader(QString pkbw, int timeout_ms, QObject* parent)
    : QObject(parent)
    , pkbw_(std::move(pkbw))
    , timeout_ms_(timeout_ms) {}

ProblemCatalogLoader::~ProblemCatalogLoader() {
    if (process_ != nullptr && process_->state() != QProcess::NotRunning) {
        process_->disconnect(this);
        process_->kill();
        process_->waitForFinished(1000);
    }
}

QString ProblemCatalogLoader::source() const {
    return pkbw_ + QStringLiteral(" problems --json");
}

void ProblemCatalogLoader::start() {
    if (process_ != nullptr || ready_) {
        return;
    }
    process_ = new QProcess(this);
    process_->setProcessChannelMode(QProcess::SeparateChannels);
    deadline_ = new QTimer(this);
    deadline_->setSingleShot(true);
    connect(deadline_, &QTimer::timeout, this, [this] {
        if (ready_) {
            return;
        }
        process_->disconnect(this);
        process_->kill();
        ProblemCatalog failed;
        failed.source = source();
        failed.error = tr("%1 did not answer within %2 s").arg(source()).arg(timeout_ms_ / 1000);
        finish(failed);
    });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || ready_) {
            return; // a crash also ends in finished()
        }
        ProblemCatalog failed;
        failed.source = source();
        failed.error = tr("cannot start %1: %2").arg(pkbw_, process_->errorString());
        finish(failed);
    });
    connect(process_, &QProcess::finished, this, &ProblemCatalogLoader::process_finished);
    deadline_->start(timeout_ms_);
    process_->start(pkbw_, {QStringLiteral("problems"), QStringLiteral("--json")});
}

void ProblemCatalogLoader::process_finished() {
    if (ready_) {
        return;
    }
    ProblemCatalog catalog;
    if (process_->exitStatus() != QProcess::NormalExit || process_->exitCode() != 0) {
        catalog.error = tr("%1 failed (exit %2): %3")
                            .arg(source())
                            .arg(process_->exitCode())
                            .arg(QString::fromUtf8(process_->readAllStandardError()).trimmed().left(300));
    } else {
        catalog = parse_problem_catalog(process_->readAllStandardOutput());
        if (!catalog.error.isEmpty()) {
            catalog.error = source() + QStringLiteral(": ") + catalog.error;
        }
    }
    catalog.source = source();
    finish(std::move(catalog));
}

void ProblemCatalogLoader::finish(ProblemCatalog catalog) {
    catalog_ = std::move(catalog);
    ready_ = true;
    if (deadline_ != nullptr) {
        deadline_->stop();
    }
    emit loaded();
}

const ProblemCatalog& ProblemCatalogLoader::wait() {
    start();
    if (!ready_ && process_->waitForStarted(timeout_ms_)) {
        process_->waitForFinished(timeout_ms_); // emits finished(), which fills the catalog
    }
    if (!ready_ && process_->state() == QProcess::NotRunning &&
        process_->error() == QProcess::FailedToStart) {
        ProblemCatalog failed;
        failed.source = source();
        failed.error = tr("cannot start %1: %2").arg(pkbw_, process_->errorString());
        finish(failed);
    }
    if (!ready_) { // still running after the whole deadline
        process_->disconnect(this);
        process_->kill();
        process_->waitForFinished(1000);
        ProblemCatalog failed;
        failed.source = source();
        failed.error = tr("%1 did not answer within %2 s").arg(source()).arg(timeout_ms_ / 1000);
        finish(failed);
    }
    return catalog_;
}

ProblemCatalog load_problem_catalog(const QString& pkbw, int timeout_ms) {
    ProblemCatalogLoader loader(pkbw, timeout_ms);
    return loader.wait();
}

QString default_pkbw_executable() {
    const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/pkbw");
    if (QFileInfo(beside).isExecutable()) {
        return beside;
    }
    const QString found = QStandardPaths::findExecutable(QStringLiteral("pkbw"));
    return found.isEmpty() ? QStringLiteral("pkbw") : found;
}

ProblemCatalogLoader& problem_catalog_loader() {
    // Owned by the application, so that its child process ends with it.
    static ProblemCatalogLoader* loader = [] {
        auto* l = new ProblemCatalogLoader(default_pkbw_executable(), 20000, QCoreApplication::instance());
        l->start();
        return l;
    }();
    return *loader;
}

const ProblemCatalog& problem_catalog() {
    return problem_catalog_loader().wait();
}

} // namespace pkbw::app
