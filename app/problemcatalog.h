// The problems pkbw knows, as the pkbw program itself lists them (`pkbw problems --json`): the
// workbench compiles in no source path, so a build tree, an installed tree (a .deb: share/pkbw
// beside bin/) and a relocated copy each show their own problems and reference sources.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

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
// Runs `<pkbw> problems --json` (bounded by `timeout_ms`) and parses it.
ProblemCatalog load_problem_catalog(const QString& pkbw, int timeout_ms = 20000);
// The pkbw beside this executable, else the one on PATH, else "pkbw".
QString default_pkbw_executable();
// The catalog of default_pkbw_executable(), loaded once per process (on first use).
const ProblemCatalog& problem_catalog();

} // namespace pkbw::app
