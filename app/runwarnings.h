// A run's stored summary split into its verdict and its flags ("…; warning: X; warning: Y"), each flag
// given a severity and a reason, so that the few that matter are not lost among the expected ones.
// Runs from schema 8 on keep their flags with the engine's severity (run_flags): the Run view reads
// those; the runs list, and runs recorded before, read the severity back from the summary's "warning:"
// parts' words (docs/engine.md "Flags beside the verdict"). Qt-free apart from QString.
#pragma once

#include "pkbw/core/store.h"

#include <QString>
#include <QStringList>
#include <string>
#include <vector>

namespace pkbw::app {

// Most severe first: the order in which they are listed.
enum class FlagSeverity { Invalidating, Suspect, Info };

struct RunFlag {
    FlagSeverity severity = FlagSeverity::Suspect;
    QString text;   // as stored, without "warning: "
    QString reason; // why this severity (the tooltip)
};

struct SplitSummary {
    QString verdict;            // the summary less its flags
    std::vector<RunFlag> flags; // most severe first, in stored order within a severity
    int count(FlagSeverity severity) const;
};

// Splits `summary` at its "; warning: " parts (and "timing not trusted: …", which invalidates the
// timing) and classifies each. Loads code at run time, starts host threads and reads /proc/self/maps
// together are what the static CUDA runtime brings (runs recorded before pkbw read the candidate's
// own object flagged every CUDA candidate so): info. The candidate's problem collective through NCCL,
// NaN, all-zero or constant outputs, processes, ptrace: suspect.
SplitSummary split_summary(const std::string& summary);
// The same with the run's stored flags (the store's run_flags, schema 8): each code flag takes the
// engine's severity and reason ("info", "suspect"); a warning ("warning") is classified by its words as
// above. Without stored flags (a run from before schema 8), split_summary(summary).
SplitSummary split_summary(const std::string& summary, const std::vector<RunFlagRow>& stored);

QString severity_name(FlagSeverity severity); // "invalidating", "suspect", "info"
// A compact line for a table cell: the verdict, then "⚠ 2 suspect · 3 info" (severities present).
QString summary_cell_text(const SplitSummary& split);
// Every flag grouped by severity, each with its reason: a tooltip.
QString flags_tooltip(const SplitSummary& split);
// The same grouped for the Run header (HTML): suspicious ones first and coloured, info ones grey.
QString flags_html(const SplitSummary& split);

} // namespace pkbw::app
