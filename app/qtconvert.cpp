#include "qtconvert.h"

#include <algorithm>
#include <cmath>

namespace pkbw::app {

QString to_qstring(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

std::string to_std(const QString& text) {
    return text.toStdString();
}

std::filesystem::path to_path(const QString& path) {
    return std::filesystem::path(path.toStdString());
}

QString path_to_qstring(const std::filesystem::path& path) {
    return QString::fromStdString(path.string());
}

QString status_text(RunStatus status) {
    return to_qstring(to_string(status));
}
QString mode_text(RunMode mode) {
    return to_qstring(to_string(mode));
}
QString outcome_text(RankOutcome outcome) {
    return to_qstring(to_string(outcome));
}

bool is_failure(RunStatus status) {
    return status != RunStatus::Pass && status != RunStatus::Running;
}

QColor status_color(RunStatus status) {
    switch (status) {
    case RunStatus::Pass:
        return QColor(0x2e, 0x9e, 0x4f);
    case RunStatus::Running:
        return QColor(0x3b, 0x82, 0xf6);
    case RunStatus::Mismatch:
    case RunStatus::InvalidOutput:
        return QColor(0xdc, 0x4a, 0x38);
    case RunStatus::InvalidTiming: // right answers, a time that cannot be trusted
        return QColor(0xe0, 0x6c, 0x1a);
    case RunStatus::CompileError:
        return QColor(0xc0, 0x7a, 0x10);
    case RunStatus::Crash:
    case RunStatus::Timeout:
    case RunStatus::Error:
        return QColor(0xb0, 0x30, 0xb0);
    case RunStatus::Interrupted:
    case RunStatus::Aborted:
        return QColor(0x80, 0x80, 0x80);
    }
    return QColor(0x80, 0x80, 0x80);
}

QDateTime to_datetime(std::string_view iso8601) {
    if (iso8601.empty()) {
        return {};
    }
    QDateTime t = QDateTime::fromString(to_qstring(iso8601), Qt::ISODateWithMs);
    if (!t.isValid()) {
        t = QDateTime::fromString(to_qstring(iso8601), Qt::ISODate);
    }
    return t.toLocalTime();
}

QString format_time(std::string_view iso8601) {
    const QDateTime t = to_datetime(iso8601);
    return t.isValid() ? t.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) : to_qstring(iso8601);
}

QString verdict_text(Verdict verdict) {
    return to_qstring(verdict_name(verdict));
}

QString speedup_text(double speedup, std::optional<Verdict> verdict, int decimals) {
    QString text = QString::number(speedup, 'f', decimals) + QStringLiteral("×");
    if (verdict) {
        text += QLatin1Char(' ') + verdict_text(*verdict);
    }
    return text;
}

QString result_speedup_text(const PairOutcome& pair, int decimals) {
    if (!pair.speedup) {
        return {};
    }
    QString text = QString::number(*pair.speedup, 'f', decimals) + QStringLiteral("×");
    if (pair.verdict) {
        text += QLatin1Char(' ') + verdict_text(*pair.verdict);
    }
    if (pair.ci_low && pair.ci_high) {
        text += QStringLiteral(" [%1–%2]")
                    .arg(QString::number(*pair.ci_low, 'f', decimals),
                         QString::number(*pair.ci_high, 'f', decimals));
    } else if (!pair.verdict) {
        text += QStringLiteral(" (no interval)");
    }
    if (pkb_disagrees(pair)) {
        text += QStringLiteral(" ≠ PKB %1×").arg(QString::number(*pair.pkb_speedup, 'f', decimals));
    }
    return text;
}

QString result_speedup_tooltip(const PairOutcome& pair) {
    if (!pair.speedup) {
        return {};
    }
    QString tip = QStringLiteral("speedup %1×").arg(*pair.speedup, 0, 'f', 3);
    if (pair.ci_low && pair.ci_high) {
        tip +=
            QStringLiteral(", 95% interval %1–%2").arg(*pair.ci_low, 0, 'f', 3).arg(*pair.ci_high, 0, 'f', 3);
    } else {
        tip += QStringLiteral(" (no interval stored: counted by its point estimate)");
    }
    if (pair.verdict) {
        tip += QStringLiteral(", verdict %1").arg(verdict_text(*pair.verdict));
    }
    if (pair.pkb_speedup) {
        tip += QStringLiteral("; PKB's speedup %1×").arg(*pair.pkb_speedup, 0, 'f', 3);
    }
    if (pkb_disagrees(pair)) {
        tip +=
            QStringLiteral(": pkbw and PKB disagree in direction, so it counts toward no fast_p with p ≥ 1");
    } else if (counts_toward_fast_p(pair, 1.0)) {
        tip += QStringLiteral("; counts toward fast_1");
    } else {
        tip += QStringLiteral("; does not count toward fast_1 (its verdict is not faster)");
    }
    return tip;
}

QString withheld_speedup_text(RunStatus status) {
    return to_qstring(speedup_withheld_word(status));
}

QString withheld_speedup_tooltip(RunStatus status, std::optional<double> speedup,
                                 std::optional<double> ci_low, std::optional<double> ci_high) {
    QString tip = QStringLiteral("No speedup: %1.").arg(to_qstring(speedup_withheld_reason(status)));
    if (speedup) {
        tip += QStringLiteral(" Stored figures, for inspection only: %1×").arg(*speedup, 0, 'f', 3);
        if (ci_low && ci_high) {
            tip += QStringLiteral(" (%1–%2)").arg(*ci_low, 0, 'f', 3).arg(*ci_high, 0, 'f', 3);
        }
        tip += QLatin1Char('.');
    }
    return tip;
}

QString format_ratio(double ratio) {
    if (std::isinf(ratio)) {
        return QStringLiteral("inf");
    }
    if (std::isnan(ratio)) {
        return QStringLiteral("nan");
    }
    if (ratio != 0 && (std::fabs(ratio) < 1e-3 || std::fabs(ratio) >= 1e4)) {
        return QString::number(ratio, 'e', 2);
    }
    return QString::number(ratio, 'g', 3);
}

QString format_ratio_compact(double ratio) {
    if (!std::isfinite(ratio) || (ratio != 0 && std::fabs(ratio) < 1e-3) || std::fabs(ratio) < 1e3) {
        return format_ratio(ratio);
    }
    // 8.32e+04 -> 8.3e4: five characters, where a grid cell of the rank x trial grid holds about six.
    auto shortened = [ratio](int decimals) {
        QString text = QString::number(ratio, 'e', decimals);
        return text.replace(QStringLiteral("e+0"), QStringLiteral("e"))
            .replace(QStringLiteral("e+"), QStringLiteral("e"));
    };
    const QString text = shortened(1);
    return text.size() <= 6 ? text : shortened(0); // 1.0e100 -> 1e100
}

QString format_shape(const Shape& shape) {
    QStringList dims;
    for (auto d : shape) {
        dims << QString::number(d);
    }
    return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QString format_lengths(std::optional<std::int64_t> bound, std::optional<std::int64_t> ref_length,
                       std::optional<std::int64_t> cand_length) {
    if (!bound) {
        return {};
    }
    auto text = [](std::optional<std::int64_t> length) {
        return length ? QString::number(*length) : QStringLiteral("?");
    };
    if (ref_length == cand_length) {
        return QStringLiteral("%1 of %2 rows").arg(text(ref_length)).arg(*bound);
    }
    return QStringLiteral("length %1, the reference's %2 (bound %3)")
        .arg(text(cand_length), text(ref_length))
        .arg(*bound);
}

QColor ratio_color(bool pass, double worst_ratio) {
    if (pass) {
        const double t = std::clamp(std::isfinite(worst_ratio) ? worst_ratio : 1.0, 0.0, 1.0);
        // hue 130 (green) at an exact match to 60 (yellow) at the tolerance
        return QColor::fromHsvF(static_cast<float>((130.0 - 70.0 * t) / 360.0), 0.55f, 0.85f);
    }
    const double excess = std::isfinite(worst_ratio) ? std::log10(std::max(worst_ratio, 1.0)) : 4.0;
    const double t = std::clamp(excess / 4.0, 0.0, 1.0);
    return QColor::fromHsvF(static_cast<float>((30.0 - 30.0 * t) / 360.0), static_cast<float>(0.6 + 0.3 * t),
                            static_cast<float>(0.95 - 0.35 * t));
}

QColor text_color_on(const QColor& background) {
    // Relative luminance (Rec. 709 weights on the sRGB values: close enough to pick black or white).
    const double y = 0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return y > 0.45 ? QColor(Qt::black) : QColor(Qt::white);
}

QColor not_run_color() {
    return QColor(0x9a, 0x9a, 0x9a);
}

QColor tie_explained_color() {
    return QColor(0x8e, 0x5c, 0xc8);
}

QString tie_text(const TieReport& report) {
    return to_qstring(tie_report_text(report));
}

QStringList sweep_header_cells(const std::vector<double>& ps) {
    QStringList cells{QStringLiteral("generation"), QStringLiteral("attempted"), QStringLiteral("correct"),
                      QStringLiteral("faster")};
    for (double p : ps) {
        cells << QStringLiteral("fast_%1").arg(p);
    }
    cells << QStringLiteral("geomean") << QStringLiteral("failures");
    return cells;
}

QStringList sweep_row_cells(const SweepGenerationRow& row, bool perf, const std::vector<double>& ps) {
    QStringList cells{to_qstring(row.label), QString::number(row.attempted), QString::number(row.correct),
                      perf ? QString::number(row.faster) : QStringLiteral("-")};
    for (double p : ps) {
        cells << (p <= 0 || perf ? QString::number(row.fast_p(p), 'f', 2) : QStringLiteral("-"));
    }
    const auto geo = row.geomean();
    cells << (geo ? QString::number(*geo, 'f', 3) : QStringLiteral("-"));
    QStringList failures;
    for (const auto& [kind, count] : row.failures) {
        failures << QStringLiteral("%1 %2").arg(to_qstring(kind)).arg(count);
    }
    cells << (failures.isEmpty() ? QStringLiteral("-") : failures.join(QStringLiteral(", ")));
    return cells;
}

} // namespace pkbw::app
