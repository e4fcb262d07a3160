// Export of any chart (PNG, SVG, PDF) and any table (CSV), and the context menus offering it.
#pragma once

#include <QString>
#include <functional>

class QAbstractItemModel;
class QAbstractItemView;
class QCustomPlot;
class QMenu;
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

// The context menus install_export_menus shows (owned by the caller): a chart's "Export chart…" (PNG,
// SVG or PDF by the file's extension) and "Reset zoom"; a table's "Export table as CSV…" and "Export
// as image…".
QMenu* chart_context_menu(QCustomPlot* plot);
QMenu* table_context_menu(QAbstractItemView* view);

// Where the menus' actions ask for a file and report a failure: by default a QFileDialog (the
// selected filter's extension added to a name typed without one) and a QMessageBox. A test replaces
// them so that the actions run without a modal dialog; empty functions restore the defaults.
using SavePathPrompt =
    std::function<QString(QWidget* parent, const QString& caption, const QString& filters)>;
using ExportErrorReport = std::function<void(QWidget* parent, const QString& error)>;
void set_export_prompts(SavePathPrompt ask, ExportErrorReport report);
// `path` with the extension of a file dialog's selected filter ("SVG (*.svg)" -> ".svg") when it has
// none: the export's format follows the extension, so "chart" saved as SVG must not become a PNG.
QString with_filter_extension(const QString& path, const QString& selected_filter);

} // namespace pkbw::app
