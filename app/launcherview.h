// The launcher: builds a `pkbw <mode> ... --json` command from a form, runs it as a QProcess, reads
// its JSON-lines protocol (core's protocol::parse_line) into per-rank progress bars and a live log,
// and cancels by terminating pkbw, which kills its ranks and marks the run interrupted. Each bar shows
// its rank's phase, trial progress and verdict (red on a failure), a busy bar during the perf phase
// (pkbw reports no progress inside it), and "interrupted" after a cancel. The form is checked before
// pkbw starts (a comma list of problems runs each in turn), and remembered between sessions.
#pragma once

#include <QProcess>
#include <QWidget>
#include <nlohmann/json_fwd.hpp>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QFormLayout;
class QGridLayout;
class QGroupBox;
class QVBoxLayout;

namespace pkbw::app {

class ProblemCatalogLoader;
struct ProblemCatalog;

class LauncherView : public QWidget {
    Q_OBJECT
public:
    // The problem names are checked against `problems`'s list (null: the process's,
    // problem_catalog_loader()), taken as it arrives: a start before then waits for it.
    explicit LauncherView(QWidget* parent = nullptr, ProblemCatalogLoader* problems = nullptr);

    void set_store(const QString& path) { store_ = path; }
    void set_executable(const QString& path);
    QString executable() const;

    // Form access (tests and scripted use).
    void set_problem(const QString& problem);
    void set_solution(const QString& file);
    void set_solutions_dir(const QString& dir);
    void set_mode(const QString& mode);
    void set_ranks(int ranks);
    void set_trials(int trials);
    void set_backend(const QString& backend);
    void set_pkb_checkout(const QString& dir);
    // The folder of pkbw's sample generations (<data>/samples, from the problem list's folders):
    // solutions_<backend>_<dtype>_…, the dtype each backend's samples are written for.
    void set_samples_root(const QString& dir);
    // The dtype of the backend's sample generations ("f32" for host, "bf16" for cuda in this tree), ""
    // when there are none. pick_sample_dtype() sets the form's dtype to it: on the user's choice of
    // backend, and once the samples are known when no dtype was restored or chosen.
    QString sample_dtype(const QString& backend) const;
    QString dtype() const;
    // The known problems (validation, choices), and why there are none when `stems` is empty. Given
    // here, they replace the loader's list (which is then not waited for).
    void set_problem_list(const QStringList& stems, const QString& error = {});
    // Whether the loader's list has not arrived yet (validate() says so; start() waits for it).
    bool problem_list_loading() const { return problems_loading_; }

    // The arguments of the first problem's run (arguments_for for each of a comma list).
    QStringList arguments() const;
    QStringList arguments_for(const QString& problem) const;
    // The --solution NAME given with a generation folder alone: the backend its name gives
    // (solutions_<backend>_…), else the form's backend.
    QString solution_name_for_folder() const;
    // The problems of the form's list, in order; empty when the field is empty.
    QStringList problems() const;
    // Why the form cannot start ("" when it can): checked before pkbw is started.
    QString validate() const;
    QString rank_text(int rank) const;            // the bar's text
    const QProgressBar* rank_bar(int rank) const; // null for a rank without a bar
    bool running() const;
    qint64 process_id() const { return process_->processId(); } // pkbw's, 0 when not running
    void start();
    void cancel();

    QString log_text() const;
    QString status_text() const;
    int rank_progress(int rank) const; // percent, -1 when no such rank
    qint64 run_id() const { return run_id_; }
    QString final_status() const { return final_status_; }

    // One protocol line, as if pkbw had printed it (also used for every stdout line).
    void handle_line(const QByteArray& line);

signals:
    void run_started(qint64 run_id);
    void run_finished(qint64 run_id);
    void open_run_requested(qint64 run_id); // "Open run N" after a run finished
    void process_ended(int exit_code);

private:
    void handle_message(const std::string& event, const nlohmann::json& body);
    // The events that change a rank's bar or the run's status line (handle_message's larger cases).
    QProgressBar* bar_for_event(int rank); // created as needed; nullptr for an event without a rank
    void show_phase(int rank, const nlohmann::json& body);
    void show_rank_result(int rank, const nlohmann::json& body, const QString& text);
    void show_run_finished(const nlohmann::json& body, const QString& text);
    void show_perf_progress(int rank, const nlohmann::json& body);
    void ensure_ranks(int count);
    void append_log(const QString& text, const QColor& color = {});
    void read_stdout();
    void read_stderr();
    void start_next();
    void save_form() const;
    void restore_form();
    void set_bar(int rank, const QString& text, const QColor& color = {});
    void apply_problem_list(const ProblemCatalog& catalog);
    void add_perf_fields(QFormLayout* form, QWidget* box);
    // The constructor's parts: the form's two halves, the progress side, the problem list, the
    // connections, and what happens when pkbw ends.
    void add_run_fields(QFormLayout* form, QGroupBox* form_box);
    void add_option_fields(QFormLayout* form, QGroupBox* form_box);
    QVBoxLayout* build_progress_side();
    void watch_problem_list(ProblemCatalogLoader* problems);
    void connect_form_and_process();
    void process_finished(int exit_code, QProcess::ExitStatus exit_status);
    QStringList perf_arguments() const; // --no-pkb, --warmup, --pairs, --iters, --launches as set
    void pick_sample_dtype();
    void follow_generation_dtype();     // the dtype a generation folder's name gives, when it gives one
    QString interrupted_text(int rank); // the bar's text after a cancel (and its busy bar stopped)
    static QString progress_text(const nlohmann::json& body); // a `progress` event as a log line

    QString store_;
    QStringList known_problems_;
    QString problem_list_error_;
    bool problems_loading_ = false; // the loader's list is awaited
    QString problems_source_;       // "<pkbw> problems --json", for the messages
    bool start_pending_ = false;    // start() was asked for while the list was loading
    QStringList queue_;             // problems still to run of a comma list
    bool cancelled_ = false;
    std::vector<QString> verdicts_; // per rank: "" or the first failing status
    QProcess* process_ = nullptr;
    QByteArray stdout_buffer_;
    qint64 run_id_ = 0;
    QString final_status_;
    int trials_expected_ = 1;
    std::vector<int> trials_done_;

    QLineEdit* exe_ = nullptr;
    QComboBox* problem_ = nullptr;
    QLineEdit* solution_ = nullptr;
    QLineEdit* solutions_dir_ = nullptr;
    QComboBox* mode_ = nullptr;
    QSpinBox* ranks_ = nullptr;
    QComboBox* dtype_ = nullptr;
    QSpinBox* trials_ = nullptr;
    QDoubleSpinBox* atol_ = nullptr;
    QDoubleSpinBox* rtol_ = nullptr;
    QComboBox* backend_ = nullptr;
    QCheckBox* trace_ = nullptr;
    QLineEdit* pkb_checkout_ = nullptr;
    QSpinBox* m_ = nullptr;
    QSpinBox* n_ = nullptr;
    QCheckBox* all_trials_ = nullptr;
    QCheckBox* keep_outputs_ = nullptr;
    QCheckBox* no_pkb_ = nullptr;
    QSpinBox* warmup_ = nullptr;
    QSpinBox* pairs_ = nullptr;
    QSpinBox* iters_ = nullptr;
    QSpinBox* launches_ = nullptr;
    QString samples_root_;
    bool dtype_chosen_ = false; // restored from the saved form, or picked by the user
    QPushButton* open_run_ = nullptr;
    qint64 open_run_id_ = 0;
    QPushButton* start_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QLabel* status_ = nullptr;
    QGridLayout* progress_layout_ = nullptr;
    std::vector<QProgressBar*> bars_;
    QPlainTextEdit* log_ = nullptr;
};

} // namespace pkbw::app
