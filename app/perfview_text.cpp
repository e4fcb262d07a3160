// PerfView's words: the headline (the speedup, or why none is shown), which method timed it, and the
// details after it (each launch's figure, samples, PKB's figure and trials, bus bandwidth).
#include "perfview.h"
#include "pkbw/core/perf_stats.h"
#include "qtconvert.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace pkbw::app {
namespace {

// The run summary's own words on why its timing is not trusted ("timing not trusted: candidate: its
// timed calls took ..."), up to the next "; " part; "" when it has none.
QString distrust_words(const RunRecord& run) {
    const QString summary = to_qstring(run.summary);
    const int at = summary.indexOf(QStringLiteral("timing not trusted"));
    if (at < 0) {
        return {};
    }
    const int end = summary.indexOf(QStringLiteral("; warning:"), at);
    return summary.mid(at, end < 0 ? -1 : end - at).toHtmlEscaped();
}

// An import-pkb run: PKB's own protocol timed it, pkbw recorded its figures and no samples.
bool imported_pkb_run(const RunRecord& run) {
    return run.backend.rfind("pkb-", 0) == 0 && run.command_line.size() > 1 &&
           run.command_line[1] == "import-pkb";
}

// What the store could not give of this run's timing ("perf samples (cannot read or write table
// perf_samples: database disk image is malformed)"): each part and the store's reason, without the
// store's path (the status bar names it); "" when every part was read.
QString unreadable_timing(const RunData& data) {
    QStringList parts;
    for (const std::string& part : data.unreadable) {
        const QString text = to_qstring(part);
        const int colon = text.indexOf(QStringLiteral(": "));
        if (!text.startsWith(QStringLiteral("perf ")) || colon < 0) {
            continue;
        }
        QString reason = text.mid(colon + 2);
        if (reason.startsWith(QStringLiteral("store "))) { // "store <path>: <reason>"
            reason = reason.mid(reason.indexOf(QStringLiteral(": ")) + 2);
        }
        parts << QStringLiteral("%1 (%2)").arg(text.left(colon), reason).toHtmlEscaped();
    }
    return parts.join(QStringLiteral(", "));
}

// The pooled figures of a run whose speedup is no result, for inspection: plain text, no verdict (a
// "faster" there read as the result it is not: the H200 store's reply_early run, 19408.500×).
QString inspection_text(const PerfFigures& f) {
    return QObject::tr("%1× (95% interval %2–%3%4; no verdict)")
        .arg(QString::number(f.speedup, 'f', 3))
        .arg(QString::number(f.ci_low, 'f', 3))
        .arg(QString::number(f.ci_high, 'f', 3))
        .arg(f.launches > 1 ? QObject::tr(", pooled over %1 launches").arg(f.launches) : QString());
}

QString figures_text(const PerfFigures& f) {
    QString text =
        QObject::tr("%1×</b> (95% interval %2–%3%4): <b>%5")
            .arg(QString::number(f.speedup, 'f', 3))
            .arg(QString::number(f.ci_low, 'f', 3))
            .arg(QString::number(f.ci_high, 'f', 3))
            .arg(f.launches > 1
                     ? QObject::tr(", pooled over %1 launches%2")
                           .arg(f.launches)
                           .arg(f.extended_from > 0
                                    ? QObject::tr(", %1 of them added when the first %2 read ambiguous")
                                          .arg(f.launches - f.extended_from)
                                          .arg(f.extended_from)
                                    : QString())
                     : QString())
            .arg(f.verdict);
    return text;
}

// Each launch's own speedup and interval, when the run pooled several ("" for one launch: its interval is
// the pooled one, less the judge's margin).
QString per_launch_text(const PerfFigures& f) {
    if (f.per_launch.size() <= 1) {
        return {};
    }
    QStringList launches;
    for (const StoredLaunch& l : f.per_launch) {
        QString one = PerfView::tr("%1×").arg(QString::number(l.speedup, 'f', 3));
        if (l.ci_low && l.ci_high) {
            one += PerfView::tr(" (%1–%2)")
                       .arg(QString::number(*l.ci_low, 'f', 3), QString::number(*l.ci_high, 'f', 3));
        }
        launches << one;
    }
    return PerfView::tr(" Per launch: %1.").arg(launches.join(QStringLiteral(", ")));
}

// PKB's own figure beside pkbw's, and for imported PKB runs its per-trial speedups: two identical
// trials of PKB's protocol can differ by 2x, and a mean alone hides it.
QString pkb_speedup_text(const RunData& data, double pkb, bool trusted) {
    QString text;
    QStringList trials;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    std::vector<std::pair<int, double>> per_trial;
    for (const PerfSummaryRow& row : data.summaries) {
        if (row.rank == -1 && row.statistic.rfind("pkb_speedup.trial_", 0) == 0) {
            per_trial.emplace_back(std::atoi(row.statistic.c_str() + 18), row.value);
        }
    }
    std::sort(per_trial.begin(), per_trial.end());
    for (const auto& [trial, value] : per_trial) {
        trials << PerfView::tr("trial %1: %2×").arg(trial).arg(QString::number(value, 'g', 3));
        lo = std::min(lo, value);
        hi = std::max(hi, value);
    }
    text +=
        trusted
            ? PerfView::tr(" <b>PKB's speedup %1×</b>").arg(QString::number(pkb, 'f', 3))
            : PerfView::tr(" PKB's figure, for inspection as well: %1×").arg(QString::number(pkb, 'f', 3));
    if (per_trial.size() > 1) {
        text += PerfView::tr(" (geometric mean of %1 trials; %2; spread %3–%4×, %5× apart)")
                    .arg(per_trial.size())
                    .arg(trials.join(QStringLiteral(", ")))
                    .arg(QString::number(lo, 'g', 3))
                    .arg(QString::number(hi, 'g', 3))
                    .arg(QString::number(lo > 0 ? hi / lo : 0.0, 'f', 2));
    }
    text += QLatin1Char('.');
    return text;
}

// The run's bus bandwidth, against the peak when the run stored one; "" when it stored none.
QString bandwidth_text(const RunData& data) {
    QString text;
    const auto busbw = data.summary("busbw_gbps");
    const auto peak = data.summary("peak_busbw_gbps");
    if (busbw) {
        text += PerfView::tr(" Bus bandwidth %1 GB/s").arg(QString::number(*busbw, 'f', 1));
        if (peak && *peak > 0) {
            text += PerfView::tr(" (%1% of %2 GB/s peak)")
                        .arg(QString::number(100 * *busbw / *peak, 'f', 0))
                        .arg(*peak);
        }
        text += QLatin1Char('.');
    }
    return text;
}

} // namespace

QString PerfView::headline() const {
    if (!data_) {
        return {};
    }
    const bool imported = imported_pkb_run(data_->run);
    if (!imported && data_->run.mode != RunMode::Perf && !data_->summary("pkb_speedup") &&
        !data_->summary("speedup")) {
        return tr("No timing: run %1 is an %2 run (perf mode times the candidate against the reference).")
            .arg(data_->run.id)
            .arg(mode_text(data_->run.mode));
    }
    if (data_->run.status == RunStatus::Running) {
        return tr("Run %1 is still running: no speedup yet.").arg(data_->run.id);
    }
    if (data_->run.status == RunStatus::Interrupted) {
        return tr("<b>No speedup: run %1 was interrupted</b> before its timing finished.").arg(data_->run.id);
    }
    if (!speedup_is_result(data_->run.status)) {
        const QString words = distrust_words(data_->run);
        return tr("<b>No speedup: %1.</b>%2")
            .arg(to_qstring(speedup_withheld_reason(data_->run.status)))
            .arg(words.isEmpty() ? QString() : QStringLiteral(" ") + words + QLatin1Char('.'));
    }
    const PerfFigures f = compute_perf(*data_);
    if (imported && !f.has_figures) {
        return tr("<b>Imported PKB run:</b> PKB's own protocol timed it, not pkbw (no pkbw samples, "
                  "interval or verdict).");
    }
    if (!f.has_figures) {
        return {};
    }
    return tr("<b>Speedup %1</b>.").arg(figures_text(f));
}

// Which figure the run's speedup is (docs/perf.md "A method per kernel size"), and the other one's.
QString PerfView::method_text() const {
    const auto graph = data_->summary("headline_graph");
    const auto launched = data_->summary("launched_speedup");
    const auto launched_verdict = data_->summary("launched_verdict");
    if (!graph || data_->run.backend != "cuda") {
        return {}; // stored before the graph figure, or CPU loops (the host backend): one method only
    }
    if (*graph != 1.0) {
        // The launched figure is the headline: say so, and what the graph's replays read or that there were
        // none, so that two runs of one problem measured differently are not read alike.
        QString text =
            tr(" The figure is the launched figure: each call launched by its process, as a caller "
               "pays it.");
        if (const auto g = data_->summary("graph_speedup")) {
            text +=
                tr(" Graph figure (each side's calls replayed from a CUDA graph, the host's launches left "
                   "out): %1×")
                    .arg(QString::number(*g, 'f', 3));
            const auto low = data_->summary("graph_ci_low");
            const auto high = data_->summary("graph_ci_high");
            if (low && high) {
                text += tr(" (%1–%2)").arg(QString::number(*low, 'f', 3), QString::number(*high, 'f', 3));
            }
            if (const auto v = data_->summary("graph_verdict")) {
                text += QStringLiteral(", ") + verdict_text(verdict_from_code(*v));
            }
            text += QStringLiteral(".");
        } else {
            // The run's info flag says why (runs since 2026-12-04); older ones leave it to their report.
            QString why;
            for (const RunFlagRow& flag : data_->flags) {
                if (flag.text.rfind("no graph figure: ", 0) == 0) {
                    why = to_qstring(flag.text.substr(17));
                }
            }
            text += why.isEmpty()
                        ? tr(" No graph figure was measured: its calls could not be captured into a CUDA "
                             "graph, or the run was asked for none (the run's report says which).")
                        : tr(" No graph figure was measured: %1.").arg(why.toHtmlEscaped());
        }
        return text;
    }
    QString text =
        tr(" The figure is the graph figure: each side's calls replayed from a CUDA graph, since they "
           "take under 20 µs of device time and a launched call is mostly its launch.");
    if (launched) {
        text += tr(" Launched, as a caller pays each call: %1×").arg(QString::number(*launched, 'f', 3));
        const auto low = data_->summary("launched_ci_low");
        const auto high = data_->summary("launched_ci_high");
        if (low && high) {
            text += tr(" (%1–%2)").arg(QString::number(*low, 'f', 3), QString::number(*high, 'f', 3));
        }
        if (launched_verdict) {
            text += QStringLiteral(", ") + verdict_text(verdict_from_code(*launched_verdict));
        }
        text += QStringLiteral(".");
    }
    return text;
}

QString PerfView::summary_text() const {
    if (!data_) {
        return {};
    }
    const PerfFigures f = compute_perf(*data_);
    const bool trusted = speedup_is_result(data_->run.status);
    QString text = headline();
    if (f.has_figures && !trusted) {
        // Withheld: the figures stay, for inspection, never as a result.
        text += (f.stored ? tr(" Stored figures, for inspection only (not a result): %1.")
                          : tr(" Figures recomputed from its samples, for inspection only (not a result): "
                               "%1."))
                    .arg(inspection_text(f));
    } else if (f.has_figures) {
        text += per_launch_text(f);
        text += method_text();
        if (!f.stored) {
            text += tr(" (Recomputed from the samples: this run stored no interval.)");
        }
    }
    const QString unreadable = unreadable_timing(*data_);
    const bool interrupted = data_->run.status == RunStatus::Interrupted;
    if (f.has_samples) {
        if (interrupted) {
            text += tr(" The samples it recorded before it stopped are plotted, for inspection.");
        }
        if (data_->world_size() > 1) { // at W=1 the slowest rank is rank 0 by definition
            text += tr(" Slowest rank: reference %1, candidate %2.")
                        .arg(f.slowest_reference_rank)
                        .arg(f.slowest_candidate_rank);
        }
    } else if (!unreadable.isEmpty()) {
        // A damaged table: the run has samples, the store cannot give them.
        text += tr(" <b>The store could not give this run's %1</b>: the plots are empty for that reason, "
                   "not because the run timed nothing.")
                    .arg(unreadable);
    } else if (interrupted) {
        text += tr(" It recorded no samples before it stopped.");
    } else if (f.has_figures) {
        text += tr(" (No samples in the store.)");
    } else if (auto s = data_->summary("speedup"); s && trusted) {
        text = tr("<b>Speedup %1×</b> (stored without an interval; no samples in the store).")
                   .arg(QString::number(*s, 'f', 3));
    } else if (data_->run.mode == RunMode::Perf && !data_->summary("pkb_speedup") && trusted) {
        text = tr("Run %1 stored neither samples nor a speedup.").arg(data_->run.id);
    }
    if (f.has_figures && trusted && data_->summary("pkb_speedup")) {
        PairOutcome pair;
        pair.speedup = f.speedup;
        pair.pkb_speedup = data_->summary("pkb_speedup");
        if (pkb_disagrees(pair)) {
            text += tr(" <b>pkbw and PKB disagree in direction</b> (%1× against PKB's %2×): this run counts "
                       "toward no fast_p with p ≥ 1.")
                        .arg(QString::number(f.speedup, 'f', 3), QString::number(*pair.pkb_speedup, 'f', 3));
        }
    }
    if (const auto pkb = data_->summary("pkb_speedup")) {
        text += pkb_speedup_text(*data_, *pkb, trusted);
    }
    text += bandwidth_text(*data_);
    return text;
}

} // namespace pkbw::app
