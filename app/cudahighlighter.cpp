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

} // namespace

CudaHighlighter::CudaHighlighter(QTextDocument* document, bool dark)
    : QSyntaxHighlighter(document) {
    const QColor keyword = dark ? QColor(0xc6, 0x78, 0xdd) : QColor(0x7a, 0x1f, 0xa2);
    const QColor cuda = dark ? QColor(0x56, 0xb6, 0xc2) : QColor(0x00, 0x6d, 0x77);
    const QColor type = dark ? QColor(0xe5, 0xc0, 0x7b) : QColor(0x8a, 0x5a, 0x00);
    const QColor number = dark ? QColor(0xd1, 0x9a, 0x66) : QColor(0x98, 0x4b, 0x00);
    const QColor string = dark ? QColor(0x98, 0xc3, 0x79) : QColor(0x2e, 0x7d, 0x32);
    const QColor preproc = dark ? QColor(0x61, 0xaf, 0xef) : QColor(0x1f, 0x5f, 0xbf);
    comment_ = make_format(dark ? QColor(0x7f, 0x84, 0x8e) : QColor(0x70, 0x70, 0x70), false, true);
    auto words = [](std::initializer_list<const char*> list) {
        QStringList w;
        for (const char* s : list) {
            w << QString::fromLatin1(s);
        }
        return QRegularExpression(QStringLiteral("\\b(") + w.join(QLatin1Char('|')) + QStringLiteral(")\\b"));
    };
    rules_.push_back({words({"if",
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
        {words({"__global__",   "__device__",    "__host__",    "__shared__",       "__constant__",
                "__restrict__", "__syncthreads", "__syncwarp",  "__forceinline__",  "__launch_bounds__",
                "threadIdx",    "blockIdx",      "blockDim",    "gridDim",          "warpSize",
                "atomicAdd",    "atomicCAS",     "__shfl_sync", "__shfl_down_sync", "__shfl_xor_sync",
                "cudaStream_t", "cudaError_t",   "ncclComm_t",  "__nv_bfloat16",    "__half",
                "dim3"}),
         make_format(cuda, true)});
    rules_.push_back(
        {words({"void",     "bool",     "char",     "short",  "int",     "long",    "float",   "double",
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

void CudaHighlighter::highlightBlock(const QString& text) {
    for (const Rule& rule : rules_) {
        auto it = rule.pattern.globalMatch(text);
        while (it.hasNext()) {
            const auto m = it.next();
            setFormat(static_cast<int>(m.capturedStart()), static_cast<int>(m.capturedLength()), rule.format);
        }
    }
    setCurrentBlockState(0);
    qsizetype start = previousBlockState() == 1 ? 0 : text.indexOf(comment_start_);
    while (start >= 0) {
        const auto end = comment_end_.match(text, start);
        qsizetype length;
        if (!end.hasMatch()) {
            setCurrentBlockState(1);
            length = text.length() - start;
        } else {
            length = end.capturedEnd() - start;
        }
        setFormat(static_cast<int>(start), static_cast<int>(length), comment_);
        start = text.indexOf(comment_start_, start + length);
    }
}

} // namespace pkbw::app
