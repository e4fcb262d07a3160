// The problems pkbw knows, as the pkbw program itself lists them (`pkbw problems --json`): the
// workbench compiles in no source path, so a build tree, an installed tree (a .deb: share/pkbw
// beside bin/) and a relocated copy each show their own problems and reference sources.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

class QProcess;
class QTimer;

namespace pkbw::app {

struct ProblemEntry {
    int id = 0;
    QString stem, title, category, description;
    QString folder;                                 // empty when pkbw found no data directory
    QString readme, reference_cuda, reference_host; // file paths; empty when absent
};

struct ProblemCatalog {
    QVector<ProblemEntry> problems; // in problem-number order
    QString source;                 // where the list came from ("/usr/bin/pkbw problems --json")
    QString error;                  // why the list is empty or partial (names the program or field)

    QStringList stems() const;
    const ProblemEntry* find(const QString& stem) const;
    // The folder that holds the problem folders (for older runs' reference fallback); empty if none.
    QString problems_root() const;
};

// Parses pkbw's `problems --json` array. A malformed document or entry is reported in `error`
// (naming the entry's index and field); the entries before it are kept.
ProblemCatalog parse_problem_catalog(const QByteArray& json);
// Runs `<pkbw> problems --json` off the GUI thread's way: the child process is watched through
// QProcess's signals, so a window that needs the list is shown at once and fills in on loaded().
// A pkbw that cannot start, fails, prints a malformed list or does not answer within `timeout_ms`
// gives a catalog whose `error` says so (naming the program).
class ProblemCatalogLoader : public QObject {
    Q_OBJECT
public:
    explicit ProblemCatalogLoader(QString pkbw, int timeout_ms = 20000, QObject* parent = nullptr);
    ~ProblemCatalogLoader() override;

    void start(); // once; later calls do nothing
    bool ready() const { return ready_; }
    // The list once ready(); empty (no error) before.
    const ProblemCatalog& catalog() const { return catalog_; }
    // Blocks until ready (starting the load if needed), for a caller that cannot go on without it.
    const ProblemCatalog& wait();
    QString source() const; // "<pkbw> problems --json"

signals:
    void loaded(); // once, when ready (with the list or its error)

private:
    void finish(ProblemCatalog catalog);
    void process_finished();

    QString pkbw_;
    int timeout_ms_;
    QProcess* process_ = nullptr;
    QTimer* deadline_ = nullptr;
    ProblemCatalog catalog_;
    bool ready_ = false;
};

// Runs `<pkbw> problems --json` (bounded by `timeout_ms`) and waits for it.
ProblemCatalog load_problem_catalog(const QString& pkbw, int timeout_ms = 20000);
// The pkbw beside this executable, else the one on PATH, else "pkbw".
QString default_pkbw_executable();
// The process's loader of default_pkbw_executable()'s list, started at its first use (the main
// window's construction): views take the list from it as it arrives.
ProblemCatalogLoader& problem_catalog_loader();
// The process's catalog, waiting for it if it is still loading.
const ProblemCatalog& problem_catalog();

} // namespace pkbw::app
