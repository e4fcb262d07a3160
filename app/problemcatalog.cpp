#include "problemcatalog.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <algorithm>

namespace pkbw::app {

QStringList ProblemCatalog::stems() const {
    QStringList out;
    for (const ProblemEntry& p : problems) {
        out << p.stem;
    }
    return out;
}

const ProblemEntry* ProblemCatalog::find(const QString& stem) const {
    for (const ProblemEntry& p : problems) {
        if (p.stem == stem) {
            return &p;
        }
    }
    return nullptr;
}

QString ProblemCatalog::problems_root() const {
    for (const ProblemEntry& p : problems) {
        if (!p.folder.isEmpty()) {
            return QFileInfo(p.folder).path();
        }
    }
    return {};
}

ProblemCatalog parse_problem_catalog(const QByteArray& json) {
    ProblemCatalog catalog;
    QJsonParseError parse{};
    const QJsonDocument document = QJsonDocument::fromJson(json, &parse);
    if (parse.error != QJsonParseError::NoError || !document.isArray()) {
        catalog.error = QObject::tr("the problem list is not a JSON array (%1 at byte %2)")
                            .arg(parse.errorString())
                            .arg(parse.offset);
        return catalog;
    }
    const QJsonArray list = document.array();
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QJsonObject o = list.at(i).toObject();
        ProblemEntry entry;
        entry.id = o.value(QStringLiteral("id")).toInt();
        entry.stem = o.value(QStringLiteral("stem")).toString();
        if (entry.id <= 0 || entry.stem.isEmpty()) {
            catalog.error = QObject::tr("problem list entry %1 has no id or stem").arg(i);
            break;
        }
        entry.title = o.value(QStringLiteral("title")).toString();
        entry.category = o.value(QStringLiteral("category")).toString();
        entry.description = o.value(QStringLiteral("description")).toString();
        entry.folder = o.value(QStringLiteral("folder")).toString();
        const QJsonObject files = o.value(QStringLiteral("files")).toObject();
        entry.readme = files.value(QStringLiteral("README.md")).toString();
        entry.reference_cuda = files.value(QStringLiteral("reference.cu")).toString();
        entry.reference_host = files.value(QStringLiteral("reference_host.cpp")).toString();
        catalog.problems.push_back(entry);
    }
    std::stable_sort(catalog.problems.begin(), catalog.problems.end(),
                     [](const ProblemEntry& a, const ProblemEntry& b) { return a.id < b.id; });
    return catalog;
}

ProblemCatalog load_problem_catalog(const QString& pkbw, int timeout_ms) {
    QProcess process;
    process.setProcessChannelMode(QProcess::SeparateChannels);
    process.start(pkbw, {QStringLiteral("problems"), QStringLiteral("--json")});
    const QString source = pkbw + QStringLiteral(" problems --json");
    ProblemCatalog catalog;
    if (!process.waitForStarted(timeout_ms)) {
        catalog.source = source;
        catalog.error = QObject::tr("cannot start %1: %2").arg(pkbw, process.errorString());
        return catalog;
    }
    if (!process.waitForFinished(timeout_ms)) {
        process.kill();
        process.waitForFinished(1000);
        catalog.source = source;
        catalog.error = QObject::tr("%1 did not answer within %2 s").arg(source).arg(timeout_ms / 1000);
        return catalog;
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        catalog.source = source;
        catalog.error = QObject::tr("%1 failed (exit %2): %3")
                            .arg(source)
                            .arg(process.exitCode())
                            .arg(QString::fromUtf8(process.readAllStandardError()).trimmed().left(300));
        return catalog;
    }
    catalog = parse_problem_catalog(process.readAllStandardOutput());
    catalog.source = source;
    if (!catalog.error.isEmpty()) {
        catalog.error = source + QStringLiteral(": ") + catalog.error;
    }
    return catalog;
}

QString default_pkbw_executable() {
    const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/pkbw");
    if (QFileInfo(beside).isExecutable()) {
        return beside;
    }
    const QString found = QStandardPaths::findExecutable(QStringLiteral("pkbw"));
    return found.isEmpty() ? QStringLiteral("pkbw") : found;
}

const ProblemCatalog& problem_catalog() {
    // Loaded on the GUI thread at first use (a 60-entry list: tens of milliseconds).
    static const ProblemCatalog catalog = load_problem_catalog(default_pkbw_executable());
    return catalog;
}

} // namespace pkbw::app
