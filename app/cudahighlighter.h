// Syntax highlighting for C++ and CUDA sources: keywords, CUDA qualifiers and builtins, types,
// numbers, strings, preprocessor lines and comments (including /* */ across lines).
#pragma once

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace pkbw::app {

class CudaHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    explicit CudaHighlighter(QTextDocument* document, bool dark = false);

protected:
    void highlightBlock(const QString& text) override;

private:
    struct Rule {
        QRegularExpression pattern;
        QTextCharFormat format;
    };
    std::vector<Rule> rules_;
    QTextCharFormat comment_;
    QRegularExpression comment_start_{QStringLiteral("/\\*")}, comment_end_{QStringLiteral("\\*/")};
};

} // namespace pkbw::app
