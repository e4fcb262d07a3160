#include "mainwindow.h"

#include "background.h"
#include "exporting.h"
#include "generationsview.h"
#include "launcherview.h"
#include "perfview.h"
#include "pkbw/core/bundle.h"
#include "pkbw/core/error.h"
#include "pkbw/core/paths.h"
#include "pkbw/core/store.h"
#include "problembrowser.h"
#include "problemcatalog.h"
#include "qtconvert.h"
#include "runsbrowser.h"
#include "runsmodel.h"
#include "runview.h"
#include "sourceview.h"
#include "sweepsview.h"
#include "theme.h"
#include "traceview.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QCryptographicHash>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextDocument>
#include <QTimer>
#include <filesystem>

namespace pkbw::app {
namespace {
constexpr int kMaxRecent = 8;

// What tells the runs list that the CLI changed the store: how many runs, and how many still run
// (a run that finishes changes the second). Both are counts on indexed columns.
std::pair<std::int64_t, std::int64_t> store_signature(const Store& store) {
    RunFilter running;
    running.status = RunStatus::Running;
    return {store.count_runs(), store.count_runs(running)};
}
} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent) {
    setWindowTitle(tr("pkbw workbench"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/pkbw.svg")));
    tabs_ = new QTabWidget(this);
    tabs_->setObjectName(QStringLiteral("viewTabs"));
    tabs_->setDocumentMode(true);
    runs_ = new RunsBrowser(this);
    run_view_ = new RunView(this);
    perf_view_ = new PerfView(this);
    trace_view_ = new TraceView(this);
    source_view_ = new SourceView(this);
    generations_ = new GenerationsView(this);
    problems_ = new ProblemBrowser(this);
    launcher_ = new LauncherView(this);
    sweeps_ = new SweepsView(this);
    tabs_->addTab(runs_, tr("&Runs"));
    tabs_->addTab(run_view_, tr("R&un"));
    tabs_->addTab(perf_view_, tr("&Perf"));
    tabs_->addTab(trace_view_, tr("&Trace"));
    tabs_->addTab(source_view_, tr("&Sources"));
    tabs_->addTab(generations_, tr("&Generations"));
    tabs_->addTab(problems_, tr("Pro&blems"));
    tabs_->addTab(launcher_, tr("&Launch"));
    // Last, so that the tab numbers of --tab (tools/screenshots.sh, docs/gui.md) keep their meaning.
    tabs_->addTab(sweeps_, tr("S&weeps"));
    setCentralWidget(tabs_);
    statusBar()->showMessage(tr("Open a store (Ctrl+O) or a run folder (Ctrl+Shift+O)."));

    connect(runs_, &RunsBrowser::run_activated, this, &MainWindow::open_run);
    connect(generations_, &GenerationsView::run_activated, this, &MainWindow::open_run);
    connect(sweeps_, &SweepsView::run_activated, this, &MainWindow::open_run);
    connect(source_view_, &SourceView::run_activated, this, &MainWindow::open_run);
    connect(run_view_, &RunView::run_loaded, this, [this](std::shared_ptr<const RunData> data) {
        perf_view_->set_data(data);
        source_view_->set_data(data);
        trace_view_->set_data(data);
        if (tab_after_run_ >= 0) {
            tabs_->setCurrentIndex(tab_after_run_);
            tab_after_run_ = -1;
        } else if (data->run.mode == RunMode::Perf && tabs_->currentWidget() == run_view_) {
            tabs_->setCurrentWidget(perf_view_); // a perf run has no compared outputs to show
        }
        setWindowTitle(
            tr("pkbw workbench — run %1 (%2)").arg(data->run.id).arg(to_qstring(data->run.problem_stem)));
    });
    connect(run_view_, &RunView::load_failed, this,
            [this](const QString& m) { statusBar()->showMessage(m); });
    // A finished run stays on the Launch tab with its log; "Open run N" there opens it.
    connect(launcher_, &LauncherView::run_finished, this, [this](qint64 run_id) {
        runs_->refresh();
        generations_->reload();
        if (run_id > 0) {
            statusBar()->showMessage(
                tr("Run %1 finished: Open run %1 on the Launch tab shows it.").arg(run_id), 10000);
        }
    });
    connect(launcher_, &LauncherView::open_run_requested, this, &MainWindow::open_run);

    refresh_ = new QTimer(this);
    refresh_->setInterval(3000);
    connect(refresh_, &QTimer::timeout, this, &MainWindow::poll_store);
    refresh_->start();

    build_menus();
    install_export_menus(this);
    QSettings settings;
    // A first start (no saved geometry) opens at a laptop's screen, 1366x768, or the screen's room when
    // smaller: Qt's default (about 1020x670) needed sideways scrolling in the runs list.
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray()))
        resize(first_start_size());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    // Start on the Runs tab: a remembered Launch or Trace tab would greet a fresh start with a form
    // or an empty timeline.
    tabs_->setCurrentIndex(0);
    if (settings.value(QStringLiteral("window/theme")).toString() == QLatin1String("dark")) {
        apply_theme(Theme::Dark);
    }
    theme_plots(this);
}

MainWindow::~MainWindow() = default;

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open store…"), this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open store"), QFileInfo(store_).path(),
                                         tr("pkbw stores (*.db *.sqlite *.pkbw);;All files (*)"));
        if (!path.isEmpty()) {
            open_store(path);
        }
    });
    open->setShortcut(QKeySequence::Open);
    QAction* folder = file->addAction(tr("Open run &folder…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open run folder"));
        if (!dir.isEmpty()) {
            open_run_folder(dir);
        }
    });
    folder->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    recent_menu_ = file->addMenu(tr("Recent stores"));
    update_recent_menu();
    file->addSeparator();
    QAction* reload = file->addAction(tr("&Reload"), this, [this] {
        if (!store_.isEmpty()) {
            runs_->set_store(store_);
            generations_->set_store(store_);
            sweeps_->set_store(store_);
        }
    });
    reload->setShortcut(QKeySequence::Refresh);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < tabs_->count(); ++i) {
        QAction* a = view->addAction(tabs_->tabText(i).remove(QLatin1Char('&')), this,
                                     [this, i] { tabs_->setCurrentIndex(i); });
        a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    }
    view->addSeparator();
    QAction* dark = view->addAction(tr("&Dark theme"));
    dark->setCheckable(true);
    dark->setChecked(current_theme() == Theme::Dark);
    dark->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    connect(dark, &QAction::toggled, this, [this](bool on) {
        apply_theme(on ? Theme::Dark : Theme::Light);
        QSettings().setValue(QStringLiteral("window/theme"),
                             on ? QStringLiteral("dark") : QStringLiteral("light"));
        theme_plots(this);
    });

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    QAction* launch = run->addAction(tr("&Launch…"), this, [this] { tabs_->setCurrentWidget(launcher_); });
    launch->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About"), this, [this] {
        QMessageBox::about(
            this, tr("About pkbw"),
            tr("<b>pkbw workbench</b><br>ParallelKernel Workbench: correctness, performance and "
               "sources of multi-GPU kernels, per rank.<br>Right-click any chart or table to "
               "export it."));
    });
}

void MainWindow::update_recent_menu() {
    recent_menu_->clear();
    const QStringList recent = QSettings().value(QStringLiteral("stores/recent")).toStringList();
    for (const QString& path : recent) {
        recent_menu_->addAction(path, this, [this, path] { open_store(path); });
    }
    recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::remember_store(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("stores/recent")).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) {
        recent.removeLast();
    }
    settings.setValue(QStringLiteral("stores/recent"), recent);
    update_recent_menu();
}

QString MainWindow::startup_store(bool* is_default) {
    const QStringList recent = QSettings().value(QStringLiteral("stores/recent")).toStringList();
    for (const QString& path : recent) {
        if (QFileInfo(path).isFile()) {
            *is_default = false;
            return path;
        }
    }
    *is_default = true;
    try {
        return to_qstring(default_store_path().string());
    } catch (const std::exception&) {
        return {}; // no home directory: nothing to open
    }
}

void MainWindow::open_store(const QString& path, bool create) {
    if (QFileInfo(path).isFile() && is_bundle(to_path(path))) {
        if (const QString error = open_bundle(path); !error.isEmpty()) {
            statusBar()->showMessage(tr("Could not open %1").arg(path));
            emit store_failed(error);
        }
        return;
    }
    open_store_file(path, create, nullptr, {});
}

QString MainWindow::open_bundle(const QString& file, QStringList* problems) {
    std::shared_ptr<OpenedBundle> bundle;
    try {
        bundle = std::make_shared<OpenedBundle>(OpenedBundle::open(to_path(file)));
    } catch (const std::exception& error) {
        return to_qstring(error.what());
    }
    for (const std::string& problem : bundle->problems()) {
        if (problems != nullptr) {
            *problems << to_qstring(problem);
        }
    }
    const QString store = path_to_qstring(bundle->store_path());
    opening_bundle_ = bundle;
    open_store_file(store, false, std::move(bundle), QFileInfo(file).absoluteFilePath());
    return {};
}

QString MainWindow::bundle_folder() const {
    const auto& shown = opening_bundle_ ? opening_bundle_ : bundle_;
    return shown ? path_to_qstring(shown->folder()) : QString();
}

void MainWindow::open_store_file(const QString& path, bool create, std::shared_ptr<OpenedBundle> bundle,
                                 const QString& bundle_file) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    const QString shown = bundle_file.isEmpty() ? absolute : bundle_file;
    statusBar()->showMessage(tr("Opening %1…").arg(shown));
    run_in_background(
        this,
        [p = to_path(absolute), create] {
            std::error_code ec;
            if (!create && !std::filesystem::exists(p, ec)) {
                throw Error(p.string() + ": no such store (check the path; pkbw creates a store on its first "
                                         "run with --store FILE)");
            }
            if (create) {
                std::filesystem::create_directories(p.parent_path(), ec);
            }
            const Store store =
                Store::open_read_only(p, create ? Store::Missing::Create : Store::Missing::Fail);
            return std::pair{store.schema_version(), store_signature(store)};
        },
        [this, absolute, shown, bundle,
         bundle_file](Loaded<std::pair<int, std::pair<std::int64_t, std::int64_t>>> r) mutable {
            if (bundle && bundle == opening_bundle_) {
                opening_bundle_.reset(); // held by `bundle` alone now: kept below, or removed
            }
            if (!r.ok()) {
                statusBar()->showMessage(tr("Could not open %1").arg(shown));
                // Not modal: a start with a mistyped --store, or a test, must not block on it.
                auto* box = new QMessageBox(QMessageBox::Warning, tr("Could not open the store"), r.error,
                                            QMessageBox::Ok, this);
                box->setAttribute(Qt::WA_DeleteOnClose);
                box->open();
                emit store_failed(r.error);
                return;
            }
            store_ = absolute;
            signature_ = r.value.second;
            remember_store(shown);
            runs_->set_store(absolute);
            run_view_->set_store(absolute);
            trace_view_->set_store(absolute);
            source_view_->set_store(absolute);
            generations_->set_store(absolute);
            sweeps_->set_store(absolute);
            launcher_->set_store(absolute);
            // The views read the new store now: a bundle opened before goes (its folder with it).
            bundle_ = std::move(bundle);
            bundle_file_ = bundle_file;
            statusBar()->showMessage(
                bundle_ ? tr("Bundle %1 (schema %2; unpacked for this session, removed on exit)")
                              .arg(bundle_file_)
                              .arg(r.value.first)
                        : tr("Store %1 (schema %2)").arg(absolute).arg(r.value.first));
            emit store_opened(absolute);
        });
}

QSize MainWindow::first_start_size() const {
    const QSize laptop(1366, 768);
    const QScreen* shown_on = screen() ? screen() : QGuiApplication::primaryScreen();
    return shown_on ? laptop.boundedTo(shown_on->availableGeometry().size()) : laptop;
}

QStringList MainWindow::shown_summary() const {
    QStringList lines{QStringLiteral("tab: ") +
                      tabs_->tabText(tabs_->currentIndex()).remove(QLatin1Char('&'))};
    if (const auto data = run_view_->data()) {
        lines << QStringLiteral("run: %1 (%2, %3)")
                     .arg(data->run.id)
                     .arg(to_qstring(data->run.problem_stem), to_qstring(to_string(data->run.mode)));
    }
    auto first_line = [](const QString& text) {
        for (const QString& line : text.split(QLatin1Char('\n'))) {
            if (!line.trimmed().isEmpty()) {
                return line.trimmed();
            }
        }
        return QString();
    };
    // What a user reads first on the tab, as plain text.
    auto plain = [](const QString& html) {
        QTextDocument doc;
        doc.setHtml(html);
        return doc.toPlainText().replace(QLatin1Char('\n'), QLatin1Char(' ')).simplified();
    };
    if (tabs_->currentWidget() == perf_view_) {
        lines << QStringLiteral("headline: ") + plain(perf_view_->headline());
    } else if (tabs_->currentWidget() == run_view_) {
        lines << QStringLiteral("headline: ") + plain(run_view_->header_text());
    } else if (tabs_->currentWidget() == generations_) {
        lines << QStringLiteral("headline: ") + first_line(generations_->status_text());
    } else if (tabs_->currentWidget() == sweeps_) {
        lines << QStringLiteral("headline: ") + sweeps_->header_text();
    }
    if (tabs_->currentWidget() == source_view_) {
        // What each side shows, as the file it came from would hash (sha256sum of the file).
        auto side = [&first_line](const QString& text) {
            const QByteArray bytes = text.toUtf8();
            return QStringLiteral("%1 lines; sha256 %2; first: %3")
                .arg(text.isEmpty()
                         ? 0
                         : text.count(QLatin1Char('\n')) + (text.endsWith(QLatin1Char('\n')) ? 0 : 1))
                .arg(QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex()))
                .arg(first_line(text));
        };
        lines << QStringLiteral("sources: %1").arg(source_view_->diff_summary())
              << QStringLiteral("candidate: %1; %2")
                     .arg(source_view_->right_title(), side(source_view_->right_text()))
              << QStringLiteral("reference: %1").arg(side(source_view_->left_text()));
    } else if (tabs_->currentWidget() == problems_) {
        const ProblemCatalog& catalog = problem_catalog();
        lines << QStringLiteral("problems: %1 from %2; folders under %3")
                     .arg(problems_->problems().size())
                     .arg(catalog.source, catalog.problems_root().isEmpty() ? QStringLiteral("(none)")
                                                                            : catalog.problems_root());
        if (!catalog.error.isEmpty()) {
            lines << QStringLiteral("problems error: ") + catalog.error;
        }
    }
    return lines;
}

void MainWindow::set_refresh_interval(int ms) {
    refresh_->setInterval(ms);
}

void MainWindow::poll_store() {
    if (store_.isEmpty() || polling_) {
        return;
    }
    polling_ = true;
    const QString path = store_;
    run_in_background(
        this, [p = to_path(path)] { return store_signature(Store::open_read_only(p)); },
        [this, path](Loaded<std::pair<std::int64_t, std::int64_t>> r) {
            polling_ = false;
            // A read that fails (the CLI holding a write lock) is tried again on the next tick.
            if (!r.ok() || path != store_ || r.value == signature_) {
                return;
            }
            signature_ = r.value;
            runs_->refresh();
        });
}

void MainWindow::open_run_folder(const QString& folder) {
    run_view_->open_folder(folder);
    tabs_->setCurrentWidget(run_view_);
}

void MainWindow::open_run(qint64 run_id) {
    if (run_id <= 0) {
        return;
    }
    run_view_->open_run(run_id);
    tabs_->setCurrentWidget(run_view_);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
    QMainWindow::closeEvent(event);
}

} // namespace pkbw::app
