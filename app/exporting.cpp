#include "exporting.h"

#include <QAbstractItemView>
#include <QFile>
#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>
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

void report(QWidget* parent, const QString& error) {
    if (!error.isEmpty()) {
        QMessageBox::warning(parent, QObject::tr("Export failed"), error);
    }
}

} // namespace

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

void install_export_menus(QWidget* root) {
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
        if (plot->property("pkbwExportMenu").toBool()) {
            continue;
        }
        plot->setProperty("pkbwExportMenu", true);
        plot->setContextMenuPolicy(Qt::CustomContextMenu);
        QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot](const QPoint& at) {
            QMenu menu(plot);
            menu.addAction(QObject::tr("Export chart…"), plot, [plot] {
                const QString path =
                    QFileDialog::getSaveFileName(plot, QObject::tr("Export chart"), QString(),
                                                 QObject::tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
                if (!path.isEmpty()) {
                    report(plot, export_chart(plot, path));
                }
            });
            menu.addAction(QObject::tr("Reset zoom"), plot, [plot] {
                plot->rescaleAxes();
                plot->replot();
            });
            menu.exec(plot->mapToGlobal(at));
        });
    }
    for (QAbstractItemView* view : root->findChildren<QAbstractItemView*>()) {
        if (view->property("pkbwExportMenu").toBool() || !view->model()) {
            continue;
        }
        view->setProperty("pkbwExportMenu", true);
        view->setContextMenuPolicy(Qt::CustomContextMenu);
        QObject::connect(view, &QWidget::customContextMenuRequested, view, [view](const QPoint& at) {
            QMenu menu(view);
            menu.addAction(QObject::tr("Export table as CSV…"), view, [view] {
                const QString path = QFileDialog::getSaveFileName(view, QObject::tr("Export table"),
                                                                  QString(), QObject::tr("CSV (*.csv)"));
                if (!path.isEmpty()) {
                    report(view, export_csv(view->model(), path));
                }
            });
            menu.addAction(QObject::tr("Export as image…"), view, [view] {
                const QString path = QFileDialog::getSaveFileName(
                    view, QObject::tr("Export image"), QString(), QObject::tr("PNG (*.png);;SVG (*.svg)"));
                if (!path.isEmpty()) {
                    report(view, export_chart(view, path));
                }
            });
            menu.exec(view->viewport()->mapToGlobal(at));
        });
    }
}

} // namespace pkbw::app
