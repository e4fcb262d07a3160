// The workbench window: a tab per view, File menu (open store, open run folder, recent stores),
// light/dark theme, shortcuts, and window state kept in QSettings.
#pragma once

#include <QMainWindow>

class QTabWidget;
class QMenu;

namespace pkbw::app {

class RunsBrowser;
class RunView;
class PerfView;
class SourceView;
class GenerationsView;
class ProblemBrowser;
class LauncherView;
class TraceView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens (creating when missing) the store on a worker; views follow once it is ready.
    void open_store(const QString& path);
    void open_run_folder(const QString& folder);
    void open_run(qint64 run_id);
    QString store_path() const { return store_; }

    QTabWidget* tabs() const { return tabs_; }
    RunsBrowser* runs() const { return runs_; }
    RunView* run_view() const { return run_view_; }
    PerfView* perf_view() const { return perf_view_; }
    SourceView* source_view() const { return source_view_; }
    GenerationsView* generations_view() const { return generations_; }
    ProblemBrowser* problems() const { return problems_; }
    LauncherView* launcher() const { return launcher_; }
    TraceView* trace_view() const { return trace_view_; }

signals:
    void store_opened(const QString& path);
    void store_failed(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void build_menus();
    void update_recent_menu();
    void remember_store(const QString& path);

    QString store_;
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
};

} // namespace pkbw::app
