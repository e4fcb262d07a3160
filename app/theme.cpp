#include "theme.h"

#include <QApplication>
#include <QFile>
#include <QPalette>
#include <QStyleFactory>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

Theme g_theme = Theme::Light;

QPalette dark_palette() {
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1f, 0x21, 0x24), text(0xe6, 0xe6, 0xe6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2d));
    p.setColor(QPalette::ToolTipBase, window);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Highlight, QColor(0x3b, 0x82, 0xf6));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    return p;
}

} // namespace

void apply_theme(Theme theme) {
    g_theme = theme;
    auto* app = qobject_cast<QApplication*>(QApplication::instance());
    if (!app) {
        return;
    }
    app->setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    app->setPalette(theme == Theme::Dark ? dark_palette() : app->style()->standardPalette());
    QFile qss(theme == Theme::Dark ? QStringLiteral(":/themes/dark.qss")
                                   : QStringLiteral(":/themes/light.qss"));
    app->setStyleSheet(qss.open(QIODevice::ReadOnly) ? QString::fromUtf8(qss.readAll()) : QString());
    for (QWidget* top : QApplication::topLevelWidgets()) {
        theme_plots(top);
    }
}

Theme current_theme() {
    return g_theme;
}

void theme_plot(QCustomPlot* plot) {
    const bool dark = g_theme == Theme::Dark;
    const QColor bg = dark ? QColor(0x1f, 0x21, 0x24) : Qt::white;
    const QColor fg = dark ? QColor(0xd0, 0xd0, 0xd0) : Qt::black;
    const QColor grid = dark ? QColor(0x3a, 0x3d, 0x42) : QColor(0xdd, 0xdd, 0xdd);
    plot->setBackground(bg);
    auto style_axis = [&](QCPAxis* axis) {
        axis->setBasePen(QPen(fg));
        axis->setTickPen(QPen(fg));
        axis->setSubTickPen(QPen(fg));
        axis->setTickLabelColor(fg);
        axis->setLabelColor(fg);
        axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
    };
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(bg);
        for (QCPAxis* axis : rect->axes()) {
            style_axis(axis);
        }
    }
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i) {
        if (auto* text = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i))) {
            text->setTextColor(fg);
        }
        if (auto* scale = qobject_cast<QCPColorScale*>(plot->plotLayout()->elementAt(i))) {
            style_axis(scale->axis());
        }
    }
    if (plot->legend) {
        plot->legend->setBrush(bg);
        plot->legend->setTextColor(fg);
        plot->legend->setBorderPen(QPen(fg));
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void theme_plots(QWidget* root) {
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
        theme_plot(plot);
    }
}

QPen generation_pen(const std::vector<std::string>& generations, const std::string& label) {
    static const QRgb palette[10] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                     0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
    int rank = 0; // a label the list lacks takes the place it would have
    for (const auto& g : generations)
        rank += g < label ? 1 : 0;
    return QPen(QColor::fromRgb(palette[rank % 10]), 2, rank < 10 ? Qt::SolidLine : Qt::DashLine);
}

} // namespace pkbw::app
