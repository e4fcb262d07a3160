// Syntax highlighting for C++ and CUDA sources (keywords, CUDA qualifiers and builtins, types, numbers,
// strings, preprocessor lines and comments, /* */ across lines) and for Python ones, PKB's solutions and
// references (keywords, builtins, numbers, strings with triple-quoted ones across lines, # comments).
#pragma once

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace pkbw::app {

enum class SourceLanguage { Cpp, Python };

// Python for a title or path naming a .py file ("…/2_allgather_cuda.py (sha256 …)"), else C++/CUDA.
SourceLanguage source_language(const QString& title_or_path);

class CudaHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    explicit CudaHighlighter(QTextDocument* document, bool dark = false,
                             SourceLanguage language = SourceLanguage::Cpp);

protected:
    void highlightBlock(const QString& text) override;

private:
    struct Rule {
        QRegularExpression pattern;
        QTextCharFormat format;
    };
    void add_python_rules(const QTextCharFormat& keyword, const QTextCharFormat& builtin,
                          const QTextCharFormat& number, const QTextCharFormat& string);
    void highlight_triple_quotes(const QString& text);

    SourceLanguage language_;
    std::vector<Rule> rules_;
    QTextCharFormat comment_, string_;
    QRegularExpression comment_start_{QStringLiteral("/\\*")}, comment_end_{QStringLiteral("\\*/")};
};

} // namespace pkbw::app
