#include "kope/llm/proposal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace kope::llm {
namespace {

constexpr std::string_view kKernelName = "kope_kernel";
constexpr std::string_view kModelNewName = "ModelNew";

struct CodeBlock {
  size_t open_line = 0;   // the fence line
  size_t close_line = 0;  // the closing fence line; lines.size() when not closed
  std::string language;
  std::string content;
  bool closed = false;
};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// A fence: optional indentation, then three or more ` or ~. Backtick fences
// cannot have a backtick in their info string (that is inline code).
struct Fence {
  char ch = 0;
  size_t length = 0;
  size_t indent = 0;
  std::string_view info;
};

std::optional<Fence> ReadFence(std::string_view line) {
  Fence f;
  while (f.indent < line.size() && (line[f.indent] == ' ' || line[f.indent] == '\t')) ++f.indent;
  if (f.indent >= line.size() || (line[f.indent] != '`' && line[f.indent] != '~')) {
    return std::nullopt;
  }
  f.ch = line[f.indent];
  size_t i = f.indent;
  while (i < line.size() && line[i] == f.ch) ++i;
  f.length = i - f.indent;
  if (f.length < 3) return std::nullopt;
  f.info = Trim(line.substr(i));
  if (f.ch == '`' && f.info.find('`') != std::string_view::npos) return std::nullopt;
  return f;
}

// Strips up to `indent` leading spaces, as CommonMark does inside an indented fence.
std::string_view Dedent(std::string_view line, size_t indent) {
  size_t n = 0;
  while (n < indent && n < line.size() && line[n] == ' ') ++n;
  return line.substr(n);
}

std::vector<CodeBlock> FindBlocks(const std::vector<std::string_view>& lines) {
  std::vector<CodeBlock> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::optional<Fence> open = ReadFence(lines[i]);
    if (!open) continue;
    CodeBlock block;
    block.open_line = i;
    block.close_line = lines.size();
    std::string_view info = open->info;
    block.language = Lower(info.substr(0, info.find_first_of(" \t{")));
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      std::optional<Fence> close = ReadFence(lines[j]);
      if (close && close->ch == open->ch && close->length >= open->length && close->info.empty()) {
        block.closed = true;
        block.close_line = j;
        break;
      }
      block.content += Dedent(lines[j], open->indent);
      block.content += '\n';
    }
    blocks.push_back(std::move(block));
    i = j;
  }
  return blocks;
}

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// kope_kernel as a whole word, followed by a balanced parameter list and a body.
bool DefinesKernel(std::string_view src) {
  for (size_t pos = src.find(kKernelName); pos != std::string_view::npos;
       pos = src.find(kKernelName, pos + 1)) {
    size_t end = pos + kKernelName.size();
    if ((pos > 0 && IsIdentChar(src[pos - 1])) || (end < src.size() && IsIdentChar(src[end]))) {
      continue;
    }
    size_t i = end;
    while (i < src.size() && std::isspace(static_cast<unsigned char>(src[i]))) ++i;
    if (i >= src.size() || src[i] != '(') continue;
    int depth = 0;
    for (; i < src.size(); ++i) {
      if (src[i] == '(') ++depth;
      if (src[i] == ')' && --depth == 0) break;
    }
    if (i >= src.size()) continue;
    ++i;
    while (i < src.size() && (std::isspace(static_cast<unsigned char>(src[i])) ||
                              IsIdentChar(src[i]))) {  // noexcept, attributes-free specifiers
      ++i;
    }
    if (i < src.size() && src[i] == '{') return true;
  }
  return false;
}

// `class ModelNew` at the start of a line, followed by its bases or the colon.
bool DefinesModelNew(std::string_view src) {
  constexpr std::string_view kClass = "class ModelNew";
  for (size_t pos = src.find(kClass); pos != std::string_view::npos;
       pos = src.find(kClass, pos + 1)) {
    if (pos > 0 && src[pos - 1] != '\n') continue;
    size_t i = pos + kClass.size();
    while (i < src.size() && (src[i] == ' ' || src[i] == '\t')) ++i;
    if (i < src.size() && (src[i] == '(' || src[i] == ':')) return true;
  }
  return false;
}

bool KernelLanguage(std::string_view lang) {
  for (std::string_view ok :
       {"", "cpp", "c++", "cxx", "cc", "c", "cu", "cuda", "h", "hpp", "cuh"}) {
    if (lang == ok) return true;
  }
  return false;
}

bool PythonLanguage(std::string_view lang) {
  for (std::string_view ok : {"", "python", "py", "python3"}) {
    if (lang == ok) return true;
  }
  return false;
}

// What the parser looks for in each format, and the words it fails with.
struct FormatRules {
  std::string_view marker;  // the name the source block must contain
  bool (*defines)(std::string_view);
  bool (*language_ok)(std::string_view);
  std::string_view source_words;  // what the source must be written in
  std::string_view source_noun;   // "kernel"
  std::string_view one_source;    // "kernel source"
  std::string_view hint;          // appended to every failure
};

const FormatRules& RulesFor(SourceFormat format) {
  static const FormatRules kNative = {
      kKernelName,
      DefinesKernel,
      KernelLanguage,
      "C++ or CUDA source",
      "kernel",
      "kernel source",
      "Reply with a DECISION: line saying what you change and why, an optional TAGS: line, and "
      "exactly one complete kernel source in a ```cpp (or ```cuda) block that defines "
      "kope_kernel."};
  static const FormatRules kModelNew = {
      kModelNewName,
      DefinesModelNew,
      PythonLanguage,
      "Python",
      "ModelNew",
      "ModelNew file",
      "Reply with a DECISION: line saying what you change and why, an optional TAGS: line, and "
      "exactly one complete Python file in a ```python block that defines class "
      "ModelNew(nn.Module)."};
  return format == SourceFormat::kModelNew ? kModelNew : kNative;
}

// A label line such as "DECISION: ...", "**Decision:** ..." or the heading
// "## Decision". Returns the text after the label when `line` is one.
std::optional<std::string_view> LabelText(std::string_view line, std::string_view label) {
  std::string_view s = Trim(line);
  const bool heading = !s.empty() && s.front() == '#';
  auto strip = [&s](std::string_view chars) {
    while (!s.empty() && chars.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  };
  strip("#*_ \t");
  // A list item's marker: "1." or "2)" (bullets "*" were stripped above; "-", "+" here).
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits > 0 && digits < s.size() && (s[digits] == '.' || s[digits] == ')')) {
    s.remove_prefix(digits + 1);
  } else if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    s.remove_prefix(1);
  }
  strip("*_ \t");
  if (s.size() < label.size() || Lower(s.substr(0, label.size())) != label) return std::nullopt;
  s.remove_prefix(label.size());
  strip("*_");
  if (!s.empty() && s.front() == ':') {
    s.remove_prefix(1);
    strip("*_ \t");
    return s;
  }
  if (heading && Trim(s).empty()) return s;
  return std::nullopt;
}

bool IsHeading(std::string_view line) { return !Trim(line).empty() && Trim(line).front() == '#'; }

std::vector<std::string> ParseTags(std::string_view text) {
  std::vector<std::string> tags;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",;", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view tag = Trim(text.substr(start, end - start));
    while (!tag.empty() &&
           std::string_view("`'\"[]*").find(tag.front()) != std::string_view::npos) {
      tag.remove_prefix(1);
    }
    while (!tag.empty() &&
           std::string_view("`'\"[]*.").find(tag.back()) != std::string_view::npos) {
      tag.remove_suffix(1);
    }
    std::string t = Lower(Trim(tag));
    if (!t.empty() && std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
    start = end + 1;
  }
  return tags;
}

std::string JoinTrimmed(const std::vector<std::string_view>& lines) {
  std::string out;
  for (std::string_view l : lines) {
    out += l;
    out += '\n';
  }
  return std::string(Trim(out));
}

// Removes a leading <think>...</think> (reasoning models put it in the reply).
std::optional<std::string> StripThinking(std::string text) {
  std::string_view t = Trim(text);
  if (t.rfind("<think>", 0) != 0) return text;
  size_t close = text.find("</think>");
  if (close == std::string::npos) return std::nullopt;
  return text.substr(close + std::string_view("</think>").size());
}

ParseFailure FailWith(const FormatRules& rules, std::string reason) {
  return ParseFailure{std::move(reason) + " " + std::string(rules.hint)};
}

}  // namespace

SourceFormat FormatOfSource(std::string_view source) {
  return DefinesModelNew(source) ? SourceFormat::kModelNew : SourceFormat::kNativeKernel;
}

ParsedReply ParseProposal(std::string_view reply, SourceFormat format) {
  const FormatRules& rules = RulesFor(format);
  const std::string_view name = rules.marker;
  auto fail = [&rules](std::string reason) { return FailWith(rules, std::move(reason)); };
  std::string text;
  text.reserve(reply.size());
  for (char c : reply) {
    if (c != '\r') text += c;
  }
  std::optional<std::string> answer = StripThinking(std::move(text));
  if (!answer) {
    return fail(
        "The reply ended inside <think> before any answer (it was probably cut off at "
        "the token limit); think more briefly.");
  }
  const std::vector<std::string_view> lines = SplitLines(*answer);
  const std::vector<CodeBlock> blocks = FindBlocks(lines);

  std::vector<const CodeBlock*> candidates;
  const CodeBlock* unclosed_kernel = nullptr;
  for (const CodeBlock& b : blocks) {
    if (b.content.find(name) == std::string::npos) continue;
    if (b.closed) {
      candidates.push_back(&b);
    } else {
      unclosed_kernel = &b;
    }
  }
  // Several blocks may mention the name (a call example, say); the source is
  // the one that defines it. A lone block that mentions it without a visible
  // definition (a macro, say) is taken, unless a cut-off block might be the source.
  std::vector<const CodeBlock*> defining;
  for (const CodeBlock* b : candidates) {
    if (rules.defines(b->content)) defining.push_back(b);
  }
  if (defining.size() > 1 || (defining.empty() && candidates.size() > 1)) {
    return fail(
        fmt::format("{} code blocks contain {} and {} of them define it; kope "
                    "needs exactly one {}.",
                    candidates.size(), name, defining.size(), rules.one_source));
  }
  const bool cut_off = !blocks.empty() && !blocks.back().closed;  // only the last can be
  if (defining.size() == 1) {
    candidates = defining;
  } else if (cut_off) {
    candidates.clear();
  }
  if (candidates.empty()) {
    if (unclosed_kernel != nullptr) {
      return fail(
          fmt::format("The code block containing {} is not closed: the reply looks "
                      "truncated. Keep the {} and the explanation short enough to finish.",
                      name, rules.source_noun));
    }
    if (cut_off) {
      return fail(
          fmt::format("The reply ends inside an unclosed code block (it looks truncated) and no "
                      "complete code block defining {} was found.",
                      name));
    }
    if (blocks.empty()) {
      return fail(
          answer->find(name) != std::string::npos
              ? fmt::format("{} appears in the reply but not inside a fenced code block.", name)
              : std::string("The reply has no code block."));
    }
    return fail(
        fmt::format("No code block containing {} was found ({} code block{}, "
                    "none mentions {}).",
                    name, blocks.size(), blocks.size() == 1 ? "" : "s", name));
  }
  const CodeBlock& kernel = *candidates.front();
  if (!rules.language_ok(kernel.language)) {
    return fail(
        fmt::format("The code block containing {} is marked as '{}'; the {} "
                    "must be {}.",
                    name, kernel.language, rules.source_noun, rules.source_words));
  }

  // Lines outside every code block, in order, tagged before/after the kernel.
  std::vector<bool> in_code(lines.size(), false);
  for (const CodeBlock& b : blocks) {
    for (size_t i = b.open_line; i <= b.close_line && i < lines.size(); ++i) in_code[i] = true;
  }
  Proposal proposal;
  proposal.source = kernel.content;
  proposal.language = kernel.language;
  // "DECISION: text" runs to the end of its paragraph; a label alone on its
  // line ("## Decision", "**Decision:**") heads a section that runs to the next
  // heading, code block or TAGS line.
  enum class Mode { kOutside, kParagraph, kSection } mode = Mode::kOutside;
  std::vector<std::string_view> decision, before, after;
  bool decision_seen = false, tags_seen = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (in_code[i]) {
      mode = Mode::kOutside;
      continue;
    }
    std::optional<std::string_view> tags = LabelText(lines[i], "tags");
    if (tags) {
      if (!tags_seen) proposal.tags = ParseTags(*tags);
      tags_seen = true;
      mode = Mode::kOutside;
      continue;
    }
    std::optional<std::string_view> label = LabelText(lines[i], "decision");
    if (label && !decision_seen) {
      decision_seen = true;
      mode = Trim(*label).empty() ? Mode::kSection : Mode::kParagraph;
      if (!Trim(*label).empty()) decision.push_back(*label);
      continue;
    }
    const bool blank = Trim(lines[i]).empty();
    if ((mode == Mode::kParagraph && blank) || (mode == Mode::kSection && IsHeading(lines[i]))) {
      mode = Mode::kOutside;
    }
    if (mode != Mode::kOutside) decision.push_back(lines[i]);
    (i < kernel.open_line ? before : after).push_back(lines[i]);
  }
  proposal.decision = JoinTrimmed(decision);
  if (proposal.decision.empty()) proposal.decision = JoinTrimmed(before);
  if (proposal.decision.empty()) proposal.decision = JoinTrimmed(after);
  if (proposal.decision.empty()) {
    return fail(
        fmt::format("The reply has no decision: say what you change relative to the parent {} "
                    "and why.",
                    rules.source_noun));
  }
  return proposal;
}

std::string_view ReplyFormatInstructions(SourceFormat format) {
  if (format == SourceFormat::kModelNew) {
    return "Answer in this form. First a line starting with DECISION: that says what you change "
           "relative to the parent and why you expect it to help (one short paragraph). Then, "
           "optionally, a line starting with TAGS: naming the kinds of change, separated by "
           "commas (for example: fusion, tiling, vectorization). Then exactly one fenced code "
           "block (```python) holding the complete Python file that defines class "
           "ModelNew(nn.Module), with its imports. Do not put other code blocks that contain "
           "ModelNew in the reply, and keep the reply short enough to finish.";
  }
  return "Answer in this form. First a line starting with DECISION: that says what you change "
         "relative to the parent kernel and why you expect it to help (one short paragraph). "
         "Then, optionally, a line starting with TAGS: naming the kinds of change, separated by "
         "commas (for example: tiling, vectorization, unrolling). Then exactly one fenced code "
         "block (```cpp, or ```cuda for CUDA) holding the complete source file that defines "
         "extern \"C\" int kope_kernel(...). Do not put other code blocks that contain "
         "kope_kernel in the reply, and keep the reply short enough to finish.";
}

}  // namespace kope::llm
