// Light and dark themes: a palette, a style sheet (resources/themes/*.qss) and QCustomPlot colours,
// which do not follow the palette on their own.
#pragma once

#include <QPen>
#include <string>
#include <vector>

class QCustomPlot;
class QWidget;

namespace pkbw::app {

enum class Theme { Light, Dark };

void apply_theme(Theme theme);
Theme current_theme();
// Recolours every QCustomPlot under `root` for the current theme and replots them.
void theme_plots(QWidget* root);
void theme_plot(QCustomPlot* plot);
// A generation's pen on every plot (the Sweeps and Generations tabs): the colour of its rank among
// `generations`, the store's generation labels in name order (store_generation_labels), so that one
// generation has one colour on both tabs; Tableau's ten colours, then the same hues dashed.
QPen generation_pen(const std::vector<std::string>& generations, const std::string& label);

} // namespace pkbw::app
