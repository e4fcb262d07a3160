// Light and dark themes: a palette, a style sheet (resources/themes/*.qss) and QCustomPlot colours,
// which do not follow the palette on their own.
#pragma once

class QCustomPlot;
class QWidget;

namespace pkbw::app {

enum class Theme { Light, Dark };

void apply_theme(Theme theme);
Theme current_theme();
// Recolours every QCustomPlot under `root` for the current theme and replots them.
void theme_plots(QWidget* root);
void theme_plot(QCustomPlot* plot);

} // namespace pkbw::app
