#include "exporting.h"

#include <QAbstractItemView>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <memory>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

QString quote(QString field) {
    if (field.contains(QLatin1Char(',')) || field.contains(QLatin1Char('"')) ||
        field.contains(QLatin1Char('\n'))) {
        field.replace(QLatin1String("\""), QLatin1String("\"\""));
        return QLatin1Char('"') + field + QLatin1Char('"');
    }
    return field;
}

QString ask_with_dialog(QWidget* parent, const QString& caption, const QString& filters) {
    QString selected;
    const QString path = QFileDialog::getSaveFileName(parent, caption, QString(), filters, &selected);
    return path.isEmpty() ? path : with_filter_extension(path, selected);
}

void warn_with_box(QWidget* parent, const QString& error) {
    QMessageBox::warning(parent, QObject::tr("Export failed"), error);
}

SavePathPrompt& save_path_prompt() {
    static SavePathPrompt prompt = ask_with_dialog;
    return prompt;
}

ExportErrorReport& error_report() {
    static ExportErrorReport report = warn_with_box;
    return report;
}

void report(QWidget* parent, const QString& error) {
    if (!error.isEmpty()) {
        error_report()(parent, error);
    }
}

} // namespace

QString with_filter_extension(const QString& path, const QString& selected_filter) {
    if (!QFileInfo(path).suffix().isEmpty()) {
        return path;
    }
    const qsizetype star = selected_filter.indexOf(QLatin1String("*."));
    const qsizetype end = selected_filter.indexOf(QLatin1Char(')'), star);
    return star < 0 || end < 0 ? path : path + selected_filter.mid(star + 1, end - star - 1);
}

QString export_chart(QWidget* chart, const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    auto* plot = qobject_cast<QCustomPlot*>(chart);
    const int w = std::max(chart->width(), 320), h = std::max(chart->height(), 240);
    bool ok = false;
    if (suffix == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(QSize(w, h));
        svg.setViewBox(QRect(0, 0, w, h));
        svg.setTitle(chart->objectName());
        if (plot) {
            QCPPainter painter(&svg);
            plot->toPainter(&painter, w, h);
            ok = painter.end();
        } else {
            QPainter painter(&svg);
            chart->render(&painter);
            ok = painter.end();
        }
    } else if (suffix == QLatin1String("pdf") && plot) {
        ok = plot->savePdf(path, w, h);
    } else if (suffix == QLatin1String("png") || suffix.isEmpty()) {
        ok = plot ? plot->savePng(path, w, h) : chart->grab().save(path, "PNG");
    } else {
        return QObject::tr("%1: unsupported format '%2' (png, svg%3)")
            .arg(path, suffix, plot ? QStringLiteral(", pdf") : QString());
    }
    return ok && QFile::exists(path) ? QString() : QObject::tr("%1: could not be written").arg(path);
}

QString csv_text(const QAbstractItemModel* model) {
    QString out;
    QStringList header;
    for (int c = 0; c < model->columnCount(); ++c) {
        header << quote(model->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    }
    out += header.join(QLatin1Char(',')) + QLatin1Char('\n');
    for (int r = 0; r < model->rowCount(); ++r) {
        QStringList row;
        for (int c = 0; c < model->columnCount(); ++c) {
            row << quote(model->index(r, c).data(Qt::DisplayRole).toString());
        }
        out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

QString export_csv(const QAbstractItemModel* model, const QString& path) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        return QObject::tr("%1: %2").arg(path, file.errorString());
    }
    file.write(csv_text(model).toUtf8());
    return file.commit() ? QString() : QObject::tr("%1: %2").arg(path, file.errorString());
}

void set_export_prompts(SavePathPrompt ask, ExportErrorReport report) {
    save_path_prompt() = ask ? std::move(ask) : SavePathPrompt(ask_with_dialog);
    error_report() = report ? std::move(report) : ExportErrorReport(warn_with_box);
}

QMenu* chart_context_menu(QCustomPlot* plot) {
    auto* menu = new QMenu(plot);
    menu->addAction(QObject::tr("Export chart…"), plot, [plot] {
        const QString path = save_path_prompt()(plot, QObject::tr("Export chart"),
                                                QObject::tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
        if (!path.isEmpty()) {
            report(plot, export_chart(plot, path));
        }
    });
    menu->addAction(QObject::tr("Reset zoom"), plot, [plot] {
        plot->rescaleAxes();
        plot->replot();
    });
    return menu;
}

QMenu* table_context_menu(QAbstractItemView* view) {
    auto* menu = new QMenu(view);
    menu->addAction(QObject::tr("Export table as CSV…"), view, [view] {
        const QString path =
            save_path_prompt()(view, QObject::tr("Export table"), QObject::tr("CSV (*.csv)"));
        if (!path.isEmpty()) {
            report(view, export_csv(view->model(), path));
        }
    });
    menu->addAction(QObject::tr("Export as image…"), view, [view] {
        const QString path =
            save_path_prompt()(view, QObject::tr("Export image"), QObject::tr("PNG (*.png);;SVG (*.svg)"));
        if (!path.isEmpty()) {
            report(view, export_chart(view, path));
        }
    });
    return menu;
}

void install_export_menus(QWidget* root) {
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
        if (plot->property("pkbwExportMenu").toBool()) {
            continue;
        }
        plot->setProperty("pkbwExportMenu", true);
        plot->setContextMenuPolicy(Qt::CustomContextMenu);
        QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot](const QPoint& at) {
            const std::unique_ptr<QMenu> menu(chart_context_menu(plot));
            menu->exec(plot->mapToGlobal(at));
        });
    }
    for (QAbstractItemView* view : root->findChildren<QAbstractItemView*>()) {
        if (view->property("pkbwExportMenu").toBool() || !view->model()) {
            continue;
        }
        view->setProperty("pkbwExportMenu", true);
        view->setContextMenuPolicy(Qt::CustomContextMenu);
        QObject::connect(view, &QWidget::customContextMenuRequested, view, [view](const QPoint& at) {
            const std::unique_ptr<QMenu> menu(table_context_menu(view));
            menu->exec(view->viewport()->mapToGlobal(at));
        });
    }
}

} // namespace pkbw::app
