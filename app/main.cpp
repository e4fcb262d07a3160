// pkbw-gui: the workbench. `pkbw-gui --store FILE` opens (or creates) a store; `--run-folder DIR`
// opens a run folder; `--run ID` opens that run of the store.
#include "mainwindow.h"
#include "theme.h"

#include <QApplication>
#include <QCommandLineParser>
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
    parser.addOptions({store, folder, run, tab, dark});
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
    return QApplication::exec();
}
