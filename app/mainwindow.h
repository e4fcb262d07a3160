// The workbench window: a tab per view, File menu (open store, open run folder, recent stores),
// light/dark theme, shortcuts, and window state kept in QSettings.
#pragma once

#include <QMainWindow>
#include <cstdint>
#include <memory>
#include <utility>

class QTabWidget;
class QMenu;
class QTimer;

namespace pkbw {
class OpenedBundle;
}

namespace pkbw::app {

class RunsBrowser;
class RunView;
class PerfView;
class SourceView;
class GenerationsView;
class ProblemBrowser;
class LauncherView;
class TraceView;
class SweepsView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens the store on a worker; views follow once it is ready. A missing file is refused (a
    // mistyped path must not become an empty store) unless `create` (the CLI's default store, which
    // pkbw itself creates on its first run).
    // A bundle from pkbw export-bundle (open_store finds one by its header) is open_bundle's.
    void open_store(const QString& path, bool create = false);
    // Unpacks a bundle into a temporary folder that lives as long as the window (or until another
    // store opens), and opens its store; Recent stores and the status bar name the bundle file, never
    // the folder. Returns why not ("" when unpacked); `problems` receives its damaged files.
    QString open_bundle(const QString& file, QStringList* problems = nullptr);
    // The open bundle's file and unpacked folder (the folder of one being opened, once unpacked); ""
    // when the store is no bundle.
    QString bundle_file() const { return bundle_file_; }
    QString bundle_folder() const;
    // What a start without --store opens: the most recent store that still exists, else the CLI's
    // default store ($PKBW_STORE, else $XDG_DATA_HOME/pkbw/runs.db, else ~/.local/share/pkbw/runs.db).
    static QString startup_store(bool* is_default);
    // The tab to show once the run asked for on the command line is loaded (--tab with --run).
    void set_tab_after_run(int tab) { tab_after_run_ = tab; }
    void open_run_folder(const QString& folder);
    void open_run(qint64 run_id);
    QString store_path() const { return store_; }
    // The runs list follows the runs the CLI adds and finishes while the window is open: the store is
    // polled (a count of its runs and of those still running, on a worker) every `ms`, 3 s by
    // default, and the list reloaded when either changes.
    void set_refresh_interval(int ms);

    // A few lines on the shown tab, for scripts that check a window without looking at it
    // (`--screenshot` prints them): the tab's name; on Sources, each side's title, line count and
    // first line; on Problems, how many problems came from which pkbw and where their folders are.
    QStringList shown_summary() const;
    // The window's size at a first start (nothing saved): 1366x768, bounded by the screen's room.
    QSize first_start_size() const;

    QTabWidget* tabs() const { return tabs_; }
    RunsBrowser* runs() const { return runs_; }
    RunView* run_view() const { return run_view_; }
    PerfView* perf_view() const { return perf_view_; }
    SourceView* source_view() const { return source_view_; }
    GenerationsView* generations_view() const { return generations_; }
    ProblemBrowser* problems() const { return problems_; }
    LauncherView* launcher() const { return launcher_; }
    TraceView* trace_view() const { return trace_view_; }
    SweepsView* sweeps_view() const { return sweeps_; }

signals:
    void store_opened(const QString& path);
    void store_failed(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void build_menus();
    void update_recent_menu();
    void remember_store(const QString& path);
    // Opens the store file at `path`; `bundle` (its unpacked bundle, when it is one) is kept once the
    // store is open, and named instead of the folder.
    void open_store_file(const QString& path, bool create, std::shared_ptr<OpenedBundle> bundle,
                         const QString& bundle_file);
    void poll_store();

    QString store_;
    std::shared_ptr<OpenedBundle> bundle_;         // the open bundle's unpacked folder, removed with it
    std::shared_ptr<OpenedBundle> opening_bundle_; // a bundle whose store is being opened
    QString bundle_file_;
    // (runs, running runs) when the list was last loaded; -1 before a store is open.
    std::pair<std::int64_t, std::int64_t> signature_{-1, -1};
    bool polling_ = false;
    QTimer* refresh_ = nullptr;
    int tab_after_run_ = -1;
    QTabWidget* tabs_ = nullptr;
    QMenu* recent_menu_ = nullptr;
    RunsBrowser* runs_ = nullptr;
    RunView* run_view_ = nullptr;
    PerfView* perf_view_ = nullptr;
    SourceView* source_view_ = nullptr;
    GenerationsView* generations_ = nullptr;
    ProblemBrowser* problems_ = nullptr;
    LauncherView* launcher_ = nullptr;
    TraceView* trace_view_ = nullptr;
    SweepsView* sweeps_ = nullptr;
};

} // namespace pkbw::app
