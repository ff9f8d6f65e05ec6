//===- PtxLink.cpp - Linking the PTX of -rdc programs ---------------------===//
//
// Each module is split into its top-level statements (header directives,
// declarations ending in ';', definitions with a '{...}' body), skipping
// comments; each statement's symbol name and linkage are read from the
// tokens before its ';' or '{'. The output is the header, then every
// module's kept statements in order, with colliding local names renamed.
//
//===----------------------------------------------------------------------===//

#include "PtxLink.h"

#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace wooly::capture {
namespace {

bool isIdentStart(char c) {
  return std::isalpha((unsigned char)c) || c == '_' || c == '$';
}
bool isIdentChar(char c) {
  return std::isalnum((unsigned char)c) || c == '_' || c == '$';
}

enum class Kind { Header, Declaration, Definition, Other };

struct Statement {
  size_t begin = 0, end = 0; // [begin, end) in the module text
  Kind kind = Kind::Other;
  std::string directive; // ".version", ".target", ... for headers
  std::string name;      // the symbol, for declarations and definitions
  bool isExtern = false, isVisible = false, isWeak = false;
  bool isFunction = false; // .func or .entry
  std::string head;        // the text before the body, for prototypes
};

struct Module {
  const std::string *text = nullptr;
  std::vector<Statement> statements;
  std::set<std::string> identifiers; // every identifier used
};

size_t lineOf(const std::string &text, size_t pos) {
  size_t line = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i)
    line += text[i] == '\n';
  return line;
}

/// The tokens of a statement's head (directives, identifiers, punctuation),
/// comments removed.
std::vector<std::string> tokenize(std::string_view head) {
  std::vector<std::string> tokens;
  for (size_t i = 0; i < head.size();) {
    char c = head[i];
    if (std::isspace((unsigned char)c)) {
      ++i;
    } else if (c == '.' || isIdentStart(c) || c == '%') {
      size_t j = i + 1;
      while (j < head.size() && isIdentChar(head[j]))
        ++j;
      tokens.emplace_back(head.substr(i, j - i));
      i = j;
    } else if (std::isdigit((unsigned char)c)) {
      size_t j = i + 1;
      while (j < head.size() &&
             (std::isalnum((unsigned char)head[j]) || head[j] == '.'))
        ++j;
      tokens.emplace_back(head.substr(i, j - i));
      i = j;
    } else {
      tokens.emplace_back(1, c);
      ++i;
    }
  }
  return tokens;
}

/// Reads a declaration's or definition's linkage and name.
bool describe(Statement &s, std::string_view head) {
  std::vector<std::string> t = tokenize(head);
  for (const std::string &tok : t) {
    s.isExtern |= tok == ".extern";
    s.isVisible |= tok == ".visible";
    s.isWeak |= tok == ".weak" || tok == ".common";
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != ".func" && t[i] != ".entry")
      continue;
    s.isFunction = true;
    size_t j = i + 1;
    if (j < t.size() && t[j] == "(") { // return parameters
      int depth = 0;
      for (; j < t.size(); ++j) {
        depth += t[j] == "(";
        depth -= t[j] == ")";
        if (depth == 0)
          break;
      }
      ++j;
    }
    if (j < t.size() && isIdentStart(t[j][0])) {
      s.name = t[j];
      return true;
    }
    return false;
  }
  // A variable: the last identifier before '[', '=' or the end.
  for (const std::string &tok : t) {
    if (tok == "[" || tok == "=")
      break;
    if (isIdentStart(tok[0]))
      s.name = tok;
  }
  return !s.name.empty();
}

bool splitModule(const std::string &text, size_t index, Module &m,
                 std::string &error) {
  m.text = &text;
  size_t i = 0, n = text.size();
  auto skipComment = [&](size_t &p) {
    if (text.compare(p, 2, "//") == 0) {
      while (p < n && text[p] != '\n')
        ++p;
      return true;
    }
    if (text.compare(p, 2, "/*") == 0) {
      size_t e = text.find("*/", p + 2);
      p = e == std::string::npos ? n : e + 2;
      return true;
    }
    return false;
  };
  while (i < n) {
    if (std::isspace((unsigned char)text[i]) || text[i] == '\0') {
      ++i;
      continue;
    }
    if (skipComment(i))
      continue;
    Statement s;
    s.begin = i;
    // Header directives end at the end of their line.
    static const char *headers[] = {".version", ".target", ".address_size",
                                    ".file"};
    bool header = false;
    for (const char *h : headers) {
      size_t len = std::strlen(h);
      if (text.compare(i, len, h) == 0 &&
          (i + len >= n || !isIdentChar(text[i + len]))) {
        s.kind = Kind::Header;
        s.directive = h;
        header = true;
        break;
      }
    }
    if (header) {
      while (i < n && text[i] != '\n')
        ++i;
      s.end = i;
      m.statements.push_back(s);
      continue;
    }
    // Up to ';' (a declaration) or a '{ ... }' body (a definition, or a
    // debug section), skipping comments.
    size_t headEnd = std::string::npos;
    while (i < n) {
      if (skipComment(i))
        continue;
      if (text[i] == ';') {
        headEnd = i;
        s.kind = Kind::Declaration;
        ++i;
        break;
      }
      if (text[i] == '{') {
        headEnd = i;
        s.kind = Kind::Definition;
        int depth = 0;
        while (i < n) {
          if (skipComment(i))
            continue;
          depth += text[i] == '{';
          depth -= text[i] == '}';
          ++i;
          if (depth == 0)
            break;
        }
        if (depth != 0) {
          error = "module " + std::to_string(index) + " line " +
                  std::to_string(lineOf(text, s.begin)) + ": unbalanced braces";
          return false;
        }
        // An initialised variable ends with '};'.
        size_t k = i;
        while (k < n && (text[k] == ' ' || text[k] == '\t'))
          ++k;
        if (k < n && text[k] == ';')
          i = k + 1;
        break;
      }
      if (text[i] == '=') { // `... = { ... };`: keep reading to the ';'
        int depth = 0;
        while (i < n && !(depth == 0 && text[i] == ';')) {
          depth += text[i] == '{';
          depth -= text[i] == '}';
          ++i;
        }
        headEnd = text.find('=', s.begin);
        s.kind = Kind::Declaration;
        if (i < n)
          ++i;
        break;
      }
      ++i;
    }
    s.end = i;
    if (headEnd == std::string::npos) {
      error = "module " + std::to_string(index) + " line " +
              std::to_string(lineOf(text, s.begin)) +
              ": statement without ';' or body";
      return false;
    }
    std::string_view head(text.data() + s.begin, headEnd - s.begin);
    s.head = std::string(head);
    while (!s.head.empty() && std::isspace((unsigned char)s.head.back()))
      s.head.pop_back();
    if (head.compare(0, 8, ".section") == 0) {
      s.kind = Kind::Other; // debug sections: kept as they are
    } else if (!describe(s, head)) {
      error = "module " + std::to_string(index) + " line " +
              std::to_string(lineOf(text, s.begin)) +
              ": cannot find the symbol declared by '" +
              std::string(head.substr(0, 80)) + "'";
      return false;
    }
    m.statements.push_back(std::move(s));
  }
  // Every identifier in the module (to know which renames are needed).
  for (size_t p = 0; p < n;) {
    if (isIdentStart(text[p]) &&
        (p == 0 || (!isIdentChar(text[p - 1]) && text[p - 1] != '.' &&
                    text[p - 1] != '%'))) {
      size_t q = p + 1;
      while (q < n && isIdentChar(text[q]))
        ++q;
      m.identifiers.insert(text.substr(p, q - p));
      p = q;
    } else {
      ++p;
    }
  }
  return true;
}

/// `text` with every whole identifier in `renames` replaced.
std::string rename(std::string_view text,
                   const std::map<std::string, std::string> &renames) {
  if (renames.empty())
    return std::string(text);
  std::string out;
  out.reserve(text.size() + 64);
  size_t n = text.size();
  for (size_t p = 0; p < n;) {
    if (isIdentStart(text[p]) &&
        (p == 0 || (!isIdentChar(text[p - 1]) && text[p - 1] != '.' &&
                    text[p - 1] != '%'))) {
      size_t q = p + 1;
      while (q < n && isIdentChar(text[q]))
        ++q;
      std::string id(text.substr(p, q - p));
      auto it = renames.find(id);
      out += it == renames.end() ? id : it->second;
      p = q;
    } else {
      out.push_back(text[p++]);
    }
  }
  return out;
}

double versionOf(const std::string &line) {
  size_t p = line.find_first_of("0123456789");
  return p == std::string::npos ? 0 : std::atof(line.c_str() + p);
}

} // namespace

bool linkPtx(const std::vector<std::string> &modules, std::string &out,
             std::string &error) {
  if (modules.size() == 1) {
    out = modules[0];
    return true;
  }
  std::vector<Module> ms(modules.size());
  for (size_t i = 0; i < modules.size(); ++i)
    if (!splitModule(modules[i], i, ms[i], error))
      return false;

  // Global definitions: name -> module, for `.visible` and `.weak` ones.
  std::map<std::string, size_t> globals;
  std::set<std::pair<size_t, size_t>> droppedWeak; // (module, statement)
  for (size_t i = 0; i < ms.size(); ++i)
    for (size_t k = 0; k < ms[i].statements.size(); ++k) {
      const Statement &s = ms[i].statements[k];
      if (s.kind == Kind::Header || s.kind == Kind::Other || s.isExtern ||
          !(s.isVisible || s.isWeak))
        continue;
      // Only definitions of functions have bodies; variables are
      // declarations that define.
      auto [it, inserted] = globals.emplace(s.name, i);
      if (inserted || it->second == i)
        continue;
      if (s.isWeak) {
        droppedWeak.insert({i, k});
        continue;
      }
      error = "multiple definition of '" + s.name + "' (modules " +
              std::to_string(it->second) + " and " + std::to_string(i) +
              ", line " + std::to_string(lineOf(modules[i], s.begin)) + ")";
      return false;
    }

  // Local names that another module also uses get a module suffix.
  std::vector<std::map<std::string, std::string>> renames(ms.size());
  for (size_t i = 0; i < ms.size(); ++i)
    for (const Statement &s : ms[i].statements) {
      if (s.kind == Kind::Header || s.kind == Kind::Other || s.isExtern ||
          s.isVisible || s.isWeak)
        continue;
      bool clash = globals.count(s.name) != 0;
      for (size_t j = 0; j < ms.size() && !clash; ++j)
        clash = j != i && ms[j].identifiers.count(s.name);
      if (clash)
        renames[i][s.name] = s.name + "_wooly_m" + std::to_string(i);
    }

  // The header.
  std::string version, target, addressSize;
  double best = -1;
  for (size_t i = 0; i < ms.size(); ++i)
    for (const Statement &s : ms[i].statements) {
      if (s.kind != Kind::Header)
        continue;
      std::string line = modules[i].substr(s.begin, s.end - s.begin);
      if (s.directive == ".version" && versionOf(line) > best) {
        best = versionOf(line);
        version = line;
      } else if (s.directive == ".target" && target.empty()) {
        target = line;
      } else if (s.directive == ".address_size" && addressSize.empty()) {
        addressSize = line;
      }
    }
  out = "// Linked by Wooly from " + std::to_string(ms.size()) +
        " PTX modules (-rdc)\n";
  out += version + "\n" + target + "\n" +
         (addressSize.empty() ? std::string(".address_size 64") : addressSize) +
         "\n\n";

  // PTX wants every symbol declared before it is used: a kernel of one
  // module may call a function of a later one, and a variable's initialiser
  // may name a function. So: first every function prototype (the modules'
  // own, and one for each function another module declared `.extern`),
  // then every module's variables (and unresolved externs such as vprintf,
  // once), then every module's function definitions.
  std::set<std::string> externsEmitted, prototypes;
  auto emit = [&](size_t i, const Statement &s) {
    std::string_view text(modules[i].data() + s.begin, s.end - s.begin);
    out += rename(text, renames[i]);
    out += "\n";
  };
  for (size_t i = 0; i < ms.size(); ++i)
    for (const Statement &s : ms[i].statements)
      if (s.isExtern && s.isFunction && globals.count(s.name))
        prototypes.insert(s.name);
  out += "// ---- function prototypes\n";
  for (size_t i = 0; i < ms.size(); ++i)
    for (size_t k = 0; k < ms[i].statements.size(); ++k) {
      const Statement &s = ms[i].statements[k];
      if (!s.isFunction || s.isExtern || droppedWeak.count({i, k}))
        continue;
      if (s.kind == Kind::Declaration) {
        emit(i, s);
      } else if (s.kind == Kind::Definition && prototypes.count(s.name)) {
        out += rename(s.head, renames[i]);
        out += ";\n";
      }
    }
  for (size_t i = 0; i < ms.size(); ++i) {
    out += "// ---- module " + std::to_string(i) + ": variables\n";
    for (size_t k = 0; k < ms[i].statements.size(); ++k) {
      const Statement &s = ms[i].statements[k];
      if (s.kind == Kind::Header || droppedWeak.count({i, k}) ||
          (s.isFunction && !s.isExtern))
        continue;
      if (s.isExtern &&
          (globals.count(s.name) || !externsEmitted.insert(s.name).second))
        continue; // another module defines it, or already declared
      emit(i, s);
    }
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    out += "// ---- module " + std::to_string(i) + ": functions\n";
    for (size_t k = 0; k < ms[i].statements.size(); ++k) {
      const Statement &s = ms[i].statements[k];
      if (s.isFunction && s.kind == Kind::Definition &&
          !droppedWeak.count({i, k}))
        emit(i, s);
    }
  }
  return true;
}

} // namespace wooly::capture
