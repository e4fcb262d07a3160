// The Runs tab: filters (problem, generation, backend, status, date range, free text) over the
// paged runs table. Filter choices come from the store's distinct values, loaded off the GUI thread.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;

namespace pkbw::app {

class RunsModel;

class RunsBrowser : public QWidget {
    Q_OBJECT
public:
    explicit RunsBrowser(QWidget* parent = nullptr);

    void set_store(const QString& path);
    // Reloads the runs (the store changed: the CLI added or finished one) keeping the user's place:
    // the selected run stays selected and the list stays where it was scrolled, loading as many pages
    // as were loaded before.
    void refresh();
    RunsModel* model() const { return model_; }
    QTableView* view() const { return view_; }

signals:
    void run_activated(qint64 run_id);

private:
    void apply_filter();
    void load_choices();
    void update_count();
    void restore_place();
    void fit_speedup_column();
    int speedup_column_width(bool any_speedup) const;

    // What refresh() restores once the pages are back; run 0: nothing selected.
    struct Place {
        bool pending = false;
        qint64 selected_run = 0;
        int rows = 0;
        int scroll = 0;
    } place_;

    RunsModel* model_ = nullptr;
    QTableView* view_ = nullptr;
    QComboBox* problem_ = nullptr;
    QComboBox* generation_ = nullptr;
    QComboBox* backend_ = nullptr;
    QComboBox* status_ = nullptr;
    QLineEdit* from_ = nullptr;
    QLineEdit* to_ = nullptr;
    QLineEdit* text_ = nullptr;
    QLabel* count_ = nullptr;
};

} // namespace pkbw::app
