#include "cudahighlighter.h"

namespace pkbw::app {
namespace {

QTextCharFormat make_format(const QColor& color, bool bold = false, bool italic = false) {
    QTextCharFormat f;
    f.setForeground(color);
    if (bold) {
        f.setFontWeight(QFont::Bold);
    }
    f.setFontItalic(italic);
    return f;
}

QRegularExpression word_list(std::initializer_list<const char*> list) {
    QStringList w;
    for (const char* s : list) {
        w << QString::fromLatin1(s);
    }
    return QRegularExpression(QStringLiteral("\\b(") + w.join(QLatin1Char('|')) + QStringLiteral(")\\b"));
}

// Block states: 1 inside a /* */ comment (C++), 2 inside a """ string and 3 inside a ''' one (Python).
constexpr int kInComment = 1, kInDoubleTriple = 2, kInSingleTriple = 3;

} // namespace

SourceLanguage source_language(const QString& title_or_path) {
    static const QRegularExpression python(QStringLiteral("\\.py(?![A-Za-z0-9_])"));
    return python.match(title_or_path).hasMatch() ? SourceLanguage::Python : SourceLanguage::Cpp;
}

CudaHighlighter::CudaHighlighter(QTextDocument* document, bool dark, SourceLanguage language)
    : QSyntaxHighlighter(document)
    , language_(language) {
    const QColor keyword = dark ? QColor(0xc6, 0x78, 0xdd) : QColor(0x7a, 0x1f, 0xa2);
    const QColor cuda = dark ? QColor(0x56, 0xb6, 0xc2) : QColor(0x00, 0x6d, 0x77);
    const QColor type = dark ? QColor(0xe5, 0xc0, 0x7b) : QColor(0x8a, 0x5a, 0x00);
    const QColor number = dark ? QColor(0xd1, 0x9a, 0x66) : QColor(0x98, 0x4b, 0x00);
    const QColor string = dark ? QColor(0x98, 0xc3, 0x79) : QColor(0x2e, 0x7d, 0x32);
    const QColor preproc = dark ? QColor(0x61, 0xaf, 0xef) : QColor(0x1f, 0x5f, 0xbf);
    comment_ = make_format(dark ? QColor(0x7f, 0x84, 0x8e) : QColor(0x70, 0x70, 0x70), false, true);
    string_ = make_format(string);
    if (language_ == SourceLanguage::Python) {
        add_python_rules(make_format(keyword, true), make_format(cuda), make_format(number), string_);
        return;
    }
    rules_.push_back({word_list({"if",
                                 "else",
                                 "for",
                                 "while",
                                 "do",
                                 "switch",
                                 "case",
                                 "default",
                                 "break",
                                 "continue",
                                 "return",
                                 "goto",
                                 "struct",
                                 "class",
                                 "union",
                                 "enum",
                                 "namespace",
                                 "using",
                                 "template",
                                 "typename",
                                 "public",
                                 "private",
                                 "protected",
                                 "static",
                                 "const",
                                 "constexpr",
                                 "volatile",
                                 "inline",
                                 "extern",
                                 "virtual",
                                 "override",
                                 "sizeof",
                                 "new",
                                 "delete",
                                 "nullptr",
                                 "true",
                                 "false",
                                 "this",
                                 "operator",
                                 "typedef",
                                 "auto",
                                 "static_cast",
                                 "reinterpret_cast",
                                 "const_cast",
                                 "noexcept",
                                 "throw",
                                 "try",
                                 "catch"}),
                      make_format(keyword, true)});
    rules_.push_back(
        {word_list({"__global__",   "__device__",    "__host__",    "__shared__",       "__constant__",
                    "__restrict__", "__syncthreads", "__syncwarp",  "__forceinline__",  "__launch_bounds__",
                    "threadIdx",    "blockIdx",      "blockDim",    "gridDim",          "warpSize",
                    "atomicAdd",    "atomicCAS",     "__shfl_sync", "__shfl_down_sync", "__shfl_xor_sync",
                    "cudaStream_t", "cudaError_t",   "ncclComm_t",  "__nv_bfloat16",    "__half",
                    "dim3"}),
         make_format(cuda, true)});
    rules_.push_back(
        {word_list({"void",     "bool",     "char",     "short",  "int",     "long",    "float",   "double",
                    "unsigned", "signed",   "size_t",   "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
                    "uint16_t", "uint32_t", "uint64_t", "float4", "float2",  "int4",    "uint4"}),
         make_format(type)});
    rules_.push_back({QRegularExpression(QStringLiteral(
                          "\\b(0[xX][0-9a-fA-F]+|[0-9]+\\.?[0-9]*([eE][-+]?[0-9]+)?[fFuUlL]*)\\b")),
                      make_format(number)});
    rules_.push_back({QRegularExpression(QStringLiteral("^\\s*#[^\\n]*")), make_format(preproc)});
    rules_.push_back({QRegularExpression(QStringLiteral("\"(\\\\.|[^\"\\\\])*\"|'(\\\\.|[^'\\\\])*'")),
                      make_format(string)});
    rules_.push_back({QRegularExpression(QStringLiteral("//[^\\n]*")), comment_});
}

void CudaHighlighter::add_python_rules(const QTextCharFormat& keyword, const QTextCharFormat& builtin,
                                       const QTextCharFormat& number, const QTextCharFormat& string) {
    rules_.push_back({word_list({"def",    "class",   "return",   "if",     "elif",     "else",   "for",
                                 "while",  "in",      "not",      "and",    "or",       "is",     "None",
                                 "True",   "False",   "import",   "from",   "as",       "with",   "try",
                                 "except", "finally", "raise",    "global", "nonlocal", "lambda", "yield",
                                 "pass",   "break",   "continue", "assert", "del",      "async",  "await"}),
                      keyword});
    rules_.push_back({word_list({"self", "print", "len", "range", "int", "float", "str", "list", "dict",
                                 "tuple", "set", "isinstance", "super", "torch", "dist"}),
                      builtin});
    rules_.push_back(
        {QRegularExpression(QStringLiteral("\\b(0[xX][0-9a-fA-F]+|[0-9]+\\.?[0-9]*([eE][-+]?[0-9]+)?)\\b")),
         number});
    rules_.push_back(
        {QRegularExpression(QStringLiteral("\"(\\\\.|[^\"\\\\])*\"|'(\\\\.|[^'\\\\])*'")), string});
    rules_.push_back({QRegularExpression(QStringLiteral("#[^\\n]*")), comment_});
}

// Python's triple-quoted strings (docstrings, PKB's inline CUDA sources) over as many lines as they take.
void CudaHighlighter::highlight_triple_quotes(const QString& text) {
    int state = previousBlockState();
    qsizetype pos = 0;
    while (pos <= text.length()) {
        if (state == kInDoubleTriple || state == kInSingleTriple) {
            const QString quote = state == kInDoubleTriple ? QStringLiteral("\"\"\"") : QStringLiteral("'''");
            const qsizetype end = text.indexOf(quote, pos);
            if (end < 0) {
                setFormat(static_cast<int>(pos), static_cast<int>(text.length() - pos), string_);
                setCurrentBlockState(state);
                return;
            }
            setFormat(static_cast<int>(pos), static_cast<int>(end + 3 - pos), string_);
            pos = end + 3;
            state = 0;
            continue;
        }
        const qsizetype d = text.indexOf(QStringLiteral("\"\"\""), pos),
                        s = text.indexOf(QStringLiteral("'''"), pos);
        if (d < 0 && s < 0) {
            break;
        }
        const bool double_first = s < 0 || (d >= 0 && d < s);
        const qsizetype start = double_first ? d : s;
        // A quote inside a # comment opens nothing.
        const qsizetype hash = text.indexOf(QLatin1Char('#'), pos);
        if (hash >= 0 && hash < start && format(static_cast<int>(hash)) == comment_) {
            break;
        }
        setFormat(static_cast<int>(start), 3, string_);
        pos = start + 3;
        state = double_first ? kInDoubleTriple : kInSingleTriple;
    }
    setCurrentBlockState(0);
}

void CudaHighlighter::highlightBlock(const QString& text) {
    for (const Rule& rule : rules_) {
        auto it = rule.pattern.globalMatch(text);
        while (it.hasNext()) {
            const auto m = it.next();
            setFormat(static_cast<int>(m.capturedStart()), static_cast<int>(m.capturedLength()), rule.format);
        }
    }
    if (language_ == SourceLanguage::Python) {
        highlight_triple_quotes(text);
        return;
    }
    setCurrentBlockState(0);
    qsizetype start = previousBlockState() == kInComment ? 0 : text.indexOf(comment_start_);
    while (start >= 0) {
        const auto end = comment_end_.match(text, start);
        qsizetype length;
        if (!end.hasMatch()) {
            setCurrentBlockState(kInComment);
            length = text.length() - start;
        } else {
            length = end.capturedEnd() - start;
        }
        setFormat(static_cast<int>(start), static_cast<int>(length), comment_);
        start = text.indexOf(comment_start_, start + length);
    }
}

} // namespace pkbw::app
