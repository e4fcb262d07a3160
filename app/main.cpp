// pkbw-gui: the workbench. `pkbw-gui --store FILE` opens a store (a missing file is refused); without
// it the most recent store, else the CLI's default store; `--run-folder DIR` opens a run folder;
// `--run ID` opens that run of the store; `--screenshots DIR` saves every tab as a PNG once the run is
// shown and quits (tools/screenshots.sh). `pkbw-gui FILE` opens FILE as --store does; FILE may also be
// a bundle written by `pkbw export-bundle` (unpacked into a temporary folder for the session: no
// checkout needed; the folder is removed on exit, a SIGTERM included, and Recent stores list the
// bundle file, never the folder). --help and --version need no display.
#include "launcherview.h"
#include "mainwindow.h"
#include "pkbw/core/bundle.h"
#include "pkbw/core/error.h"
#include "problemcatalog.h"
#include "qtconvert.h"
#include "runview.h"
#include "theme.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QSocketNotifier>
#include <QTabWidget>
#include <QTimer>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <memory>
#include <optional>
#include <unistd.h>

namespace {

// SIGTERM, SIGINT and SIGHUP end the event loop as closing the window does, so that the window goes
// the normal way and removes an unpacked bundle's folder. The handler only writes a byte to a pipe;
// the event loop reads it.
struct SignalPipe {
    int fds[2] = {-1, -1};
    ~SignalPipe() {
        for (int fd : fds) {
            if (fd >= 0)
                ::close(fd);
        }
    }
};
SignalPipe signal_pipe;

void on_quit_signal(int) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(signal_pipe.fds[1], &byte, 1);
}

void quit_on_signals(QCoreApplication& app) {
    if (::pipe2(signal_pipe.fds, O_CLOEXEC) != 0)
        return;
    auto* notifier = new QSocketNotifier(signal_pipe.fds[0], QSocketNotifier::Read, &app);
    QObject::connect(notifier, &QSocketNotifier::activated, &app, [] {
        char byte = 0;
        [[maybe_unused]] const ssize_t n = ::read(signal_pipe.fds[0], &byte, 1);
        QCoreApplication::quit();
    });
    struct sigaction action {};
    action.sa_handler = on_quit_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int signal : {SIGTERM, SIGINT, SIGHUP})
        ::sigaction(signal, &action, nullptr);
}

// What the command line asked for, parsed (parse_command_line).
struct GuiOptions {
    QString store_file, folder, shot_file, shots_dir;
    std::optional<qint64> run;
    std::optional<int> tab;
    bool dark = false, launch = false, size_set = false;
    QSize shot_size{1500, 950};
    bool opens_run() const { return run.has_value() || !folder.isEmpty(); }
};

// The options (--help and --version answer and exit inside parser.process); nullopt after printing why
// --size is refused.
std::optional<GuiOptions> parse_command_line(QCoreApplication& app) {
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("ParallelKernel Workbench"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption store({QStringLiteral("s"), QStringLiteral("store")},
                                   QStringLiteral("Open the store FILE (an existing one; default: the most "
                                                  "recent store, else pkbw's default store)."),
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
    const QCommandLineOption shot(QStringLiteral("screenshot"),
                                  QStringLiteral("Save the shown tab (--tab) to FILE once loaded, and quit."),
                                  QStringLiteral("FILE"));
    const QCommandLineOption launch(
        QStringLiteral("launch"),
        QStringLiteral("Start the launcher's remembered form once the store is open."));
    const QCommandLineOption size(
        QStringLiteral("size"),
        QStringLiteral("The window's size, WIDTHxHEIGHT (for --screenshot(s) 1500x950 "
                       "unless set; 1366x768 is a laptop's screen)."),
        QStringLiteral("WxH"));
    parser.addOptions({store, folder, run, tab, dark, shots, shot, launch, size});
    parser.addPositionalArgument(
        QStringLiteral("FILE"), QStringLiteral("A store, or a bundle from pkbw export-bundle (as --store)."));
    parser.process(app);
    GuiOptions o;
    o.store_file = parser.isSet(store) ? parser.value(store) : QString();
    if (o.store_file.isEmpty() && !parser.positionalArguments().isEmpty())
        o.store_file = parser.positionalArguments().first();
    o.folder = parser.isSet(folder) ? parser.value(folder) : QString();
    if (parser.isSet(run))
        o.run = parser.value(run).toLongLong();
    if (parser.isSet(tab))
        o.tab = parser.value(tab).toInt();
    o.dark = parser.isSet(dark);
    o.launch = parser.isSet(launch);
    o.shot_file = parser.isSet(shot) ? parser.value(shot) : QString();
    o.shots_dir = parser.isSet(shots) ? parser.value(shots) : QString();
    o.size_set = parser.isSet(size);
    if (o.size_set) {
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        const int w = wh.size() == 2 ? wh[0].toInt() : 0, h = wh.size() == 2 ? wh[1].toInt() : 0;
        if (w < 320 || h < 240 || w > 10000 || h > 10000) {
            std::cerr << "pkbw-gui: --size '" << parser.value(size).toStdString()
                      << "': WIDTHxHEIGHT in pixels, e.g. 1366x768 (at least 320x240)\n";
            return std::nullopt;
        }
        o.shot_size = QSize(w, h);
    }
    return o;
}

// The store the window opens first: a bundle (unpacked for the session into a folder the window
// removes when it goes, a SIGTERM too), a store, or without either (and without a run folder) the
// startup store. False after printing why a bundle cannot be opened.
bool open_first_store(pkbw::app::MainWindow& window, const GuiOptions& o) {
    if (!o.store_file.isEmpty() && pkbw::is_bundle(pkbw::app::to_path(o.store_file))) {
        QStringList problems;
        const QString error = window.open_bundle(o.store_file, &problems);
        for (const QString& problem : problems)
            std::cerr << "pkbw-gui: bundle " << o.store_file.toStdString() << ": " << problem.toStdString()
                      << "\n";
        if (!error.isEmpty()) {
            std::cerr << "pkbw-gui: " << error.toStdString() << "\n";
            return false;
        }
        std::cerr << "pkbw-gui: bundle " << o.store_file.toStdString() << " opened from "
                  << window.bundle_folder().toStdString() << "/runs.db (removed on exit)\n";
    } else if (!o.store_file.isEmpty()) {
        window.open_store(o.store_file);
    } else if (o.folder.isEmpty()) {
        bool is_default = false;
        const QString path = pkbw::app::MainWindow::startup_store(&is_default);
        if (!path.isEmpty()) {
            window.open_store(path, is_default);
        }
    }
    return true;
}

// --screenshot: one tab, once the run (if any) and the tab's own loading had time (tools/screenshots.sh);
// with --launch, the bars as the launch ended, on the Launch tab.
void schedule_screenshot(pkbw::app::MainWindow& window, const GuiOptions& o) {
    const QString file = o.shot_file;
    window.resize(o.shot_size);
    auto grab = [&window, file] {
        QTimer::singleShot(2500, &window, [&window, file] {
            // pkbw's problem list arrives asynchronously: a slow one is waited for, so that the
            // Problems tab and its summary lines show it.
            pkbw::app::problem_catalog_loader().wait();
            QCoreApplication::processEvents();
            window.grab().save(file);
            for (const QString& line : window.shown_summary())
                std::cout << "pkbw-gui: " << line.toStdString() << "\n";
            std::cout.flush();
            qApp->quit();
        });
    };
    if (o.launch) {
        QObject::connect(window.launcher(), &pkbw::app::LauncherView::process_ended, &window,
                         [&window, file] {
                             window.tabs()->setCurrentWidget(window.launcher());
                             QTimer::singleShot(800, &window, [&window, file] {
                                 window.grab().save(file);
                                 qApp->quit();
                             });
                         });
    } else if (o.opens_run()) {
        QObject::connect(window.run_view(), &pkbw::app::RunView::run_loaded, &window, grab);
        QObject::connect(window.run_view(), &pkbw::app::RunView::load_failed, &window, grab);
    } else {
        QTimer::singleShot(1500, &window, grab);
    }
}

// --screenshots: each tab is shown, given time for its workers and queued replots, then grabbed.
void schedule_screenshots(pkbw::app::MainWindow& window, const GuiOptions& o) {
    const QString out = o.shots_dir;
    QDir().mkpath(out);
    window.resize(o.shot_size);
    auto grab_all = [&window, out] {
        pkbw::app::problem_catalog_loader().wait(); // the Problems tab shows the list
        for (int i = 0; i < window.tabs()->count(); ++i) {
            QTimer::singleShot(1500 * i, &window, [&window, out, i] { window.tabs()->setCurrentIndex(i); });
            QTimer::singleShot(1500 * i + 1200, &window, [&window, out, i] {
                const QString name = window.tabs()->tabText(i).remove(QLatin1Char('&')).toLower();
                window.grab().save(QStringLiteral("%1/%2_%3.png").arg(out).arg(i).arg(name));
            });
        }
        QTimer::singleShot(1500 * window.tabs()->count() + 200, qApp, &QApplication::quit);
    };
    if (o.opens_run()) {
        QObject::connect(window.run_view(), &pkbw::app::RunView::run_loaded, &window,
                         [grab_all] { QTimer::singleShot(1000, grab_all); });
    } else {
        QTimer::singleShot(2000, grab_all);
    }
}

} // namespace

int main(int argc, char** argv) {
    // --help / --version answer without a display (over ssh): a core application parses them.
    bool info_only = false;
    for (int i = 1; i < argc; ++i) {
        for (const char* flag : {"-h", "--help", "-?", "--help-all", "-v", "--version"}) {
            info_only = info_only || std::strcmp(argv[i], flag) == 0;
        }
    }
    std::unique_ptr<QCoreApplication> owner(info_only ? new QCoreApplication(argc, argv)
                                                      : new QApplication(argc, argv));
    QCoreApplication& app = *owner;
    QCoreApplication::setOrganizationName(QStringLiteral("pkbw"));
    QCoreApplication::setApplicationName(QStringLiteral("pkbw-gui"));
    QCoreApplication::setApplicationVersion(QStringLiteral(PKBW_VERSION));
    const std::optional<GuiOptions> parsed = parse_command_line(app);
    Q_INIT_RESOURCE(pkbw_gui);
    if (!parsed)
        return 2;
    const GuiOptions& o = *parsed;
    pkbw::app::apply_theme(o.dark ? pkbw::app::Theme::Dark : pkbw::app::Theme::Light);
    quit_on_signals(app);
    pkbw::app::MainWindow window;
    if (o.size_set)
        window.resize(o.shot_size);
    window.show();
    if (!open_first_store(window, o))
        return 2;
    // --run opens the run in whichever store opens: the one given, else the startup store.
    if (o.run) {
        const qint64 id = *o.run;
        QObject::connect(&window, &pkbw::app::MainWindow::store_opened, &window,
                         [&window, id] { window.open_run(id); });
    }
    if (!o.folder.isEmpty()) {
        window.open_run_folder(o.folder);
    }
    if (o.tab) {
        // With a run to open, the tab is shown once the run is loaded (opening it shows the Run tab).
        if (o.opens_run()) {
            window.set_tab_after_run(*o.tab);
        }
        window.tabs()->setCurrentIndex(*o.tab);
    }
    if (!o.shot_file.isEmpty())
        schedule_screenshot(window, o);
    if (o.launch) {
        QObject::connect(&window, &pkbw::app::MainWindow::store_opened, &window, [&window] {
            window.tabs()->setCurrentWidget(window.launcher());
            window.launcher()->start();
        });
    }
    if (!o.shots_dir.isEmpty())
        schedule_screenshots(window, o);
    return QApplication::exec();
}
