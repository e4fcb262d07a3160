// pkbw-gui: the workbench. `pkbw-gui --store FILE` opens (or creates) a store; `--run-folder DIR`
// opens a run folder; `--run ID` opens that run of the store; `--screenshots DIR` saves every tab as
// a PNG once the run is shown and quits (tools/screenshots.sh).
#include "mainwindow.h"
#include "runview.h"
#include "theme.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QTabWidget>
#include <QTimer>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("pkbw"));
    QApplication::setApplicationName(QStringLiteral("pkbw-gui"));
    QApplication::setApplicationVersion(QStringLiteral(PKBW_VERSION));
    Q_INIT_RESOURCE(pkbw_gui);

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("ParallelKernel Workbench"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption store({QStringLiteral("s"), QStringLiteral("store")},
                                   QStringLiteral("Open the store FILE (created when missing)."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption folder(QStringLiteral("run-folder"), QStringLiteral("Open a run folder."),
                                    QStringLiteral("DIR"));
    const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Open run ID of the store."),
                                 QStringLiteral("ID"));
    const QCommandLineOption tab(QStringLiteral("tab"), QStringLiteral("Show tab N (0-based)."),
                                 QStringLiteral("N"));
    const QCommandLineOption dark(QStringLiteral("dark"), QStringLiteral("Use the dark theme."));
    const QCommandLineOption shots(QStringLiteral("screenshots"),
                                   QStringLiteral("Save each tab to DIR and quit."), QStringLiteral("DIR"));
    parser.addOptions({store, folder, run, tab, dark, shots});
    parser.process(app);

    pkbw::app::apply_theme(parser.isSet(dark) ? pkbw::app::Theme::Dark : pkbw::app::Theme::Light);
    pkbw::app::MainWindow window;
    window.show();
    if (parser.isSet(store)) {
        window.open_store(parser.value(store));
        if (parser.isSet(run)) {
            const qint64 id = parser.value(run).toLongLong();
            QObject::connect(&window, &pkbw::app::MainWindow::store_opened, &window,
                             [&window, id] { window.open_run(id); });
        }
    }
    if (parser.isSet(folder)) {
        window.open_run_folder(parser.value(folder));
    }
    if (parser.isSet(tab)) {
        window.tabs()->setCurrentIndex(parser.value(tab).toInt());
    }
    if (parser.isSet(shots)) {
        // Each tab is shown, given time for its workers and queued replots, then grabbed.
        const QString out = parser.value(shots);
        QDir().mkpath(out);
        window.resize(1500, 950);
        auto grab_all = [&window, out] {
            for (int i = 0; i < window.tabs()->count(); ++i) {
                QTimer::singleShot(1500 * i, &window,
                                   [&window, out, i] { window.tabs()->setCurrentIndex(i); });
                QTimer::singleShot(1500 * i + 1200, &window, [&window, out, i] {
                    const QString name = window.tabs()->tabText(i).remove(QLatin1Char('&')).toLower();
                    window.grab().save(QStringLiteral("%1/%2_%3.png").arg(out).arg(i).arg(name));
                });
            }
            QTimer::singleShot(1500 * window.tabs()->count() + 200, qApp, &QApplication::quit);
        };
        if (parser.isSet(run) || parser.isSet(folder)) {
            QObject::connect(window.run_view(), &pkbw::app::RunView::run_loaded, &window,
                             [grab_all] { QTimer::singleShot(1000, grab_all); });
        } else {
            QTimer::singleShot(2000, grab_all);
        }
    }
    return QApplication::exec();
}
