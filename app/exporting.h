// Export of any chart (PNG, SVG, PDF) and any table (CSV), and the context menus offering it.
#pragma once

#include <QString>

class QAbstractItemModel;
class QWidget;

namespace pkbw::app {

// A QCustomPlot is drawn through its own painter (vector output for SVG/PDF); any other widget is
// rendered. The format follows the file's extension (.png, .svg, .pdf). Returns an error text, or
// an empty string on success.
QString export_chart(QWidget* chart, const QString& path);
// Every row and column of `model` (headers first), RFC 4180 quoting. Returns an error text or "".
QString export_csv(const QAbstractItemModel* model, const QString& path);
QString csv_text(const QAbstractItemModel* model);

// Gives every QCustomPlot and QAbstractItemView under `root` a context menu with the exports.
void install_export_menus(QWidget* root);

} // namespace pkbw::app
