#include "runwarnings.h"

#include "pkbw/core/sweep_table.h"
#include "qtconvert.h"

#include <algorithm>

namespace pkbw::app {
namespace {

// The three flags the static CUDA runtime (and cuBLAS) bring into every CUDA candidate's library.
const QStringList kRuntimeNoise = {QStringLiteral("loads code at run time"),
                                   QStringLiteral("starts host threads"),
                                   QStringLiteral("reads /proc/self/maps")};

struct Rule {
    const char* words;
    FlagSeverity severity;
    const char* reason;
};

const Rule kRules[] = {
    {"timing not trusted", FlagSeverity::Invalidating,
     "pkbw's timing checks caught it: its speedup is not a result"},
    {"calls NCCL collective", FlagSeverity::Suspect,
     "a candidate for a collective problem that calls NCCL's collective lets the library do the work"},
    {"runs NCCL kernels", FlagSeverity::Suspect, "NCCL kernels ran inside the candidate's traced iterations"},
    {"NaN", FlagSeverity::Suspect, "the candidate's output holds more NaN than the reference's"},
    {"all zero", FlagSeverity::Suspect, "an all-zero output passes loose tolerances without computing"},
    {"constant", FlagSeverity::Suspect, "a constant output passes loose tolerances without computing"},
    {"starts processes", FlagSeverity::Suspect, "its own code forks or executes processes"},
    {"inspects processes", FlagSeverity::Suspect, "its own code uses ptrace or reads other processes"},
    {"processes left behind", FlagSeverity::Suspect, "processes outlived the run"},
    {"Landlock", FlagSeverity::Suspect, "the sandbox could not restrict its file access"},
    {"calls cuBLAS", FlagSeverity::Info, "cuBLAS is a library a reference-grade solution may use"},
    // An honest kernel's order of summation: the tuned sample of 46 on the H200 had one element 2 bf16 ulps
    // off in 1 of 50 timed calls; more than a few elements, or any far off, fails the check instead.
    {"numerically borderline", FlagSeverity::Info,
     "a few elements just beyond the tolerance on a few fresh inputs, as a different order of summation "
     "gives; the timed calls' check fails anything more (docs/perf.md)"},
    {"creates CUDA streams", FlagSeverity::Suspect,
     "work on a stream of its own can run outside the timed stream (the timing checks look for it)"},
};

RunFlag classify(const QString& text, bool runtime_noise) {
    RunFlag flag{
        FlagSeverity::Suspect, text,
        QStringLiteral("pkbw flagged it beside the verdict (docs/engine.md, \"Flags beside the verdict\")")};
    if (runtime_noise) {
        for (const QString& noise : kRuntimeNoise) {
            if (text.startsWith(noise)) {
                flag.severity = FlagSeverity::Info;
                flag.reason =
                    QStringLiteral("expected for CUDA code: with its two companions this is what the "
                                   "static CUDA runtime and cuBLAS bring into every CUDA library");
                return flag;
            }
        }
    }
    for (const Rule& rule : kRules) {
        if (text.contains(QLatin1String(rule.words))) {
            flag.severity = rule.severity;
            flag.reason = QString::fromUtf8(rule.reason);
            return flag;
        }
    }
    return flag;
}

} // namespace

int SplitSummary::count(FlagSeverity severity) const {
    return static_cast<int>(
        std::count_if(flags.begin(), flags.end(), [&](const RunFlag& f) { return f.severity == severity; }));
}

SplitSummary split_summary(const std::string& summary) {
    SplitSummary out;
    const QString text = QString::fromStdString(summary);
    const QString marker = QStringLiteral("; warning: ");
    QStringList parts = text.split(marker);
    out.verdict = parts.takeFirst();
    if (out.verdict.startsWith(QStringLiteral("warning: "))) { // a summary of flags alone
        parts.prepend(out.verdict.mid(9));
        out.verdict.clear();
    }
    bool noise = true;
    for (const QString& n : kRuntimeNoise) {
        noise = noise &&
                std::any_of(parts.begin(), parts.end(), [&](const QString& p) { return p.startsWith(n); });
    }
    for (const QString& part : parts) {
        out.flags.push_back(classify(part.trimmed(), noise));
    }
    const int distrust = out.verdict.indexOf(QStringLiteral("timing not trusted"));
    if (distrust >= 0) {
        // Its reasons live in the invalidating flag; the verdict keeps the words alone, so that the Run
        // header and the Runs list do not print the same sentence twice (the H200 store's runs 5 and 6).
        out.flags.push_back(classify(out.verdict.mid(distrust), false));
        out.verdict = out.verdict.left(distrust) + QStringLiteral("timing not trusted");
    }
    std::stable_sort(out.flags.begin(), out.flags.end(),
                     [](const RunFlag& a, const RunFlag& b) { return a.severity < b.severity; });
    return out;
}

SplitSummary split_summary(const std::string& summary, const std::vector<RunFlagRow>& stored) {
    SplitSummary out = split_summary(summary);
    if (stored.empty()) {
        return out;
    }
    std::vector<RunFlag> flags;
    for (const RunFlagRow& row : stored) {
        const QString text = QString::fromStdString(row.text);
        if (row.severity == "warning") {
            flags.push_back(classify(text, false));
            continue;
        }
        flags.push_back({row.severity == "info" ? FlagSeverity::Info : FlagSeverity::Suspect, text,
                         QString::fromStdString(row.reason)});
    }
    // "timing not trusted" lives in the verdict, not among the flags: kept as split_summary found it.
    for (const RunFlag& flag : out.flags) {
        const bool kept =
            std::any_of(flags.begin(), flags.end(), [&](const RunFlag& f) { return f.text == flag.text; });
        if (flag.severity == FlagSeverity::Invalidating && !kept) {
            flags.push_back(flag);
        }
    }
    std::stable_sort(flags.begin(), flags.end(),
                     [](const RunFlag& a, const RunFlag& b) { return a.severity < b.severity; });
    out.flags = std::move(flags);
    return out;
}

QString severity_name(FlagSeverity severity) {
    switch (severity) {
    case FlagSeverity::Invalidating:
        return QStringLiteral("invalidating");
    case FlagSeverity::Suspect:
        return QStringLiteral("suspect");
    case FlagSeverity::Info:
        return QStringLiteral("info");
    }
    return {};
}

QString summary_cell_text(const SplitSummary& split) {
    // One line: a solution's Python traceback reads as its exception, not its first frames (core's
    // pair_message_headline, as the Sweeps tab's failing pairs); the whole summary is the tooltip.
    const QString verdict = to_qstring(pair_message_headline(split.verdict.toStdString(), 400));
    QStringList counts;
    for (FlagSeverity s : {FlagSeverity::Invalidating, FlagSeverity::Suspect, FlagSeverity::Info}) {
        if (const int n = split.count(s)) {
            counts << QStringLiteral("%1 %2").arg(n).arg(severity_name(s));
        }
    }
    if (counts.isEmpty()) {
        return verdict;
    }
    // The first suspicious flag's words, so that the one that matters reads in the list itself.
    QString first;
    if (!split.flags.empty() && split.flags.front().severity != FlagSeverity::Info) {
        first = QStringLiteral(": ") + split.flags.front().text;
    }
    return verdict + QStringLiteral(" ⚠ ") + counts.join(QStringLiteral(" · ")) + first;
}

QString flags_tooltip(const SplitSummary& split) {
    QStringList lines;
    if (!split.verdict.isEmpty()) {
        lines << split.verdict;
    }
    for (const RunFlag& f : split.flags) {
        lines << QStringLiteral("[%1] %2 — %3").arg(severity_name(f.severity), f.text, f.reason);
    }
    return lines.join(QLatin1Char('\n'));
}

QString flags_html(const SplitSummary& split) {
    QStringList groups;
    for (FlagSeverity s : {FlagSeverity::Invalidating, FlagSeverity::Suspect, FlagSeverity::Info}) {
        QStringList texts;
        for (const RunFlag& f : split.flags) {
            if (f.severity == s) {
                texts << f.text.toHtmlEscaped();
            }
        }
        if (texts.isEmpty()) {
            continue;
        }
        const char* colour = s == FlagSeverity::Info      ? "#808080"
                             : s == FlagSeverity::Suspect ? "#c07a10"
                                                          : "#c03030";
        groups << QStringLiteral("<span style='color:%1'><b>%2</b>: %3</span>")
                      .arg(QLatin1String(colour), severity_name(s), texts.join(QStringLiteral("; ")));
    }
    return groups.join(QStringLiteral("<br>"));
}

} // namespace pkbw::app
