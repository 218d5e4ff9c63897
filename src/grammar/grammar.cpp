// The grammar matcher: llama.cpp's pushdown-stack semantics (llama-grammar's
// advance/accept/reject), with a code-point trie over the vocabulary so that
// apply() rejects whole subtrees of tokens at once.
#include "grammar/grammar.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "grammar/trigger.h"
#include "tokenizer/tokenizer.h"

namespace strix::grammar {
namespace {

using Stack = std::vector<const Element*>;  // top = back(); each entry points into the grammar's rules

// An unfinished UTF-8 sequence: its bits so far and how many bytes are still
// missing; n_remain -1 marks an invalid sequence (llama_partial_utf8).
struct Partial {
  uint32_t value = 0;
  int n_remain = 0;
};

struct Decoded {
  std::vector<uint32_t> cps;
  Partial partial;
};

// A piece as libllama reads it: a C string, up to the first NUL.
std::string_view c_view(const std::string& s) { return std::string_view(s.c_str()); }

// libllama's decode_utf8 with a carried partial sequence. Continuation bytes
// inside a sequence are not checked; an invalid start (or a non-continuation
// byte where one was carried over) gives no code points and n_remain -1.
Decoded decode_utf8(std::string_view s, Partial start) {
  static constexpr int kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
  Decoded out;
  out.cps.reserve(s.size());
  uint32_t value = start.value;
  int n_remain = start.n_remain;
  size_t i = 0;
  while (i < s.size() && n_remain > 0) {
    const auto b = static_cast<uint8_t>(s[i]);
    if ((b >> 6) != 2) return {{}, {0, -1}};
    value = (value << 6) + (b & 0x3F);
    ++i;
    --n_remain;
  }
  if (start.n_remain > 0 && n_remain == 0) out.cps.push_back(value);
  while (i < s.size()) {
    const auto first = static_cast<uint8_t>(s[i]);
    n_remain = kLen[first >> 4] - 1;
    if (n_remain < 0) return {{}, {0, -1}};
    value = first & ((1u << (7 - n_remain)) - 1);
    ++i;
    while (i < s.size() && n_remain > 0) {
      value = (value << 6) + (static_cast<uint8_t>(s[i]) & 0x3F);
      ++i;
      --n_remain;
    }
    if (n_remain == 0) out.cps.push_back(value);
  }
  out.partial = {value, n_remain};
  return out;
}

bool is_end_of_sequence(const Element* e) { return e->type == ElementType::kEnd || e->type == ElementType::kAlt; }
bool is_token_element(const Element* e) { return e->type == ElementType::kToken || e->type == ElementType::kTokenNot; }

// Whether chr is in the char class at pos, and the element after the class.
std::pair<bool, const Element*> match_char(const Element* pos, uint32_t chr) {
  bool found = false;
  const bool positive = pos->type == ElementType::kChar || pos->type == ElementType::kCharAny;
  do {
    if (pos[1].type == ElementType::kCharRngUpper) {
      found = found || (pos->value <= chr && chr <= pos[1].value);
      pos += 2;
    } else if (pos->type == ElementType::kCharAny) {
      found = true;
      pos += 1;
    } else {
      found = found || pos->value == chr;
      pos += 1;
    }
  } while (pos->type == ElementType::kCharAlt);
  return {found == positive, pos};
}

// Whether some completion of the partial sequence could be in the class.
bool match_partial_char(const Element* pos, Partial partial) {
  const bool positive = pos->type == ElementType::kChar || pos->type == ElementType::kCharAny;
  const int n_remain = partial.n_remain;
  // invalid, or a 7-bit character split over two bytes (overlong)
  if (n_remain < 0 || (n_remain == 1 && partial.value < 2)) return false;
  uint32_t low = partial.value << (n_remain * 6);
  const uint32_t high = low | ((1u << (n_remain * 6)) - 1);
  if (low == 0) {
    if (n_remain == 2) {
      low = 1u << 11;
    } else if (n_remain == 3) {
      low = 1u << 16;
    }
  }
  do {
    if (pos[1].type == ElementType::kCharRngUpper) {
      if (pos->value <= high && low <= pos[1].value) return positive;
      pos += 2;
    } else if (pos->type == ElementType::kCharAny) {
      return true;
    } else {
      if (low <= pos->value && pos->value <= high) return positive;
      pos += 1;
    }
  } while (pos->type == ElementType::kCharAlt);
  return !positive;
}

bool match_token(const Element* pos, int32_t token) {
  const bool same = pos->value == static_cast<uint32_t>(token);
  return pos->type == ElementType::kToken ? same : !same;
}

void add_unique(std::vector<Stack>& stacks, Stack stack) {
  if (std::find(stacks.begin(), stacks.end(), stack) == stacks.end()) stacks.push_back(std::move(stack));
}

// Expands a stack until every resulting stack has a terminal (char class or
// token) on top, or is empty (the grammar may end there).
void advance_stack(const std::vector<Rule>& rules, const Stack& stack, std::vector<Stack>& out) {
  std::vector<Stack> todo{stack};
  std::set<Stack> seen;
  while (!todo.empty()) {
    Stack cur = std::move(todo.back());
    todo.pop_back();
    if (!seen.insert(cur).second) continue;
    if (cur.empty()) {
      add_unique(out, std::move(cur));
      continue;
    }
    const Element* pos = cur.back();
    switch (pos->type) {
      case ElementType::kRuleRef: {
        const Element* sub = rules[pos->value].data();
        for (;;) {
          Stack next(cur.begin(), cur.end() - 1);
          if (!is_end_of_sequence(pos + 1)) next.push_back(pos + 1);
          if (!is_end_of_sequence(sub)) next.push_back(sub);
          todo.push_back(std::move(next));
          while (!is_end_of_sequence(sub)) ++sub;
          if (sub->type != ElementType::kAlt) break;
          ++sub;
        }
        break;
      }
      case ElementType::kChar:
      case ElementType::kCharNot:
      case ElementType::kCharAny:
      case ElementType::kToken:
      case ElementType::kTokenNot:
        add_unique(out, std::move(cur));
        break;
      default:
        throw Error("grammar: internal error: a stack rests inside a character class or at a rule end");
    }
  }
}

// Stacks after one code point, from a stack with a char class on top.
void accept_chr(const std::vector<Rule>& rules, const Stack& stack, uint32_t chr, std::vector<Stack>& out) {
  if (stack.empty() || is_token_element(stack.back())) return;
  const auto [ok, after] = match_char(stack.back(), chr);
  if (!ok) return;
  Stack next(stack.begin(), stack.end() - 1);
  if (!is_end_of_sequence(after)) next.push_back(after);
  advance_stack(rules, next, out);
}

std::vector<Stack> initial_stacks(const Grammar& g) {
  std::vector<Stack> stacks;
  const Element* pos = g.rules()[g.root()].data();
  for (;;) {
    Stack stack;
    if (!is_end_of_sequence(pos)) stack.push_back(pos);
    advance_stack(g.rules(), stack, stacks);
    while (!is_end_of_sequence(pos)) ++pos;
    if (pos->type != ElementType::kAlt) break;
    ++pos;
  }
  return stacks;
}

}  // namespace

// ---------------------------------------------------------------------------
// Token table: every non-end-of-generation token whose piece decodes (from a
// clean UTF-8 state) to valid code points, in a trie. Tokens are laid out in
// depth-first order so that a node's subtree is one range of `order`: first
// the tokens ending at the node, then its children's.
struct TokenTable::Impl {
  struct End {
    int32_t id;
    Partial partial;  // unfinished sequence the piece ends in
  };
  struct Node {
    uint32_t edge_begin = 0, edge_end = 0;  // children, in `edges`
    uint32_t own_end = 0;                   // order[sub_begin, own_end): tokens ending here
    uint32_t sub_begin = 0, sub_end = 0;    // order range of the whole subtree
  };
  struct Edge {
    uint32_t cp;
    uint32_t node;
  };

  int32_t n_vocab = 0;
  std::vector<std::string> pieces;  // token_to_piece(id, special = true)
  std::vector<uint8_t> eog;
  std::vector<Node> nodes;  // nodes[0] = root
  std::vector<Edge> edges;
  std::vector<End> order;
  std::vector<int32_t> pos_of;  // id -> index in order, -1 if absent
  // Tokens that can only continue a carried unfinished sequence (their piece
  // starts with a continuation byte).
  std::vector<int32_t> continuation_ids;
};

TokenTable::TokenTable(const tok::Tokenizer& tokenizer) : impl_(std::make_unique<Impl>()) {
  Impl& t = *impl_;
  const tok::Vocab& vocab = tokenizer.vocab();
  t.n_vocab = vocab.n_tokens();
  t.pieces.resize(static_cast<size_t>(t.n_vocab));
  t.eog.assign(static_cast<size_t>(t.n_vocab), 0);
  for (int32_t id = 0; id < t.n_vocab; ++id) {
    t.pieces[id] =
        static_cast<size_t>(id) < vocab.pieces.size() ? vocab.pieces[id] : tokenizer.token_to_piece(id, true);
    t.eog[id] = vocab.is_eog(id) ? 1 : 0;
  }

  // Decode every piece, sort the code-point sequences, and lay the trie out
  // in one pass over the sorted list: a sequence comes right before its
  // extensions, so nodes are created in depth-first order and the tokens
  // ending at a node precede those of its subtree.
  struct Item {
    std::vector<uint32_t> cps;
    Impl::End end;
  };
  std::vector<Item> items;
  items.reserve(static_cast<size_t>(t.n_vocab));
  for (int32_t id = 0; id < t.n_vocab; ++id) {
    if (t.eog[id]) continue;
    const std::string_view piece = c_view(t.pieces[id]);
    if (piece.empty()) continue;  // never allowed
    if ((static_cast<uint8_t>(piece[0]) >> 6) == 2) t.continuation_ids.push_back(id);
    Decoded d = decode_utf8(piece, {});
    if (d.partial.n_remain < 0) continue;  // invalid UTF-8: never allowed from a clean state
    items.push_back({std::move(d.cps), {id, d.partial}});
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.cps != b.cps ? a.cps < b.cps : a.end.id < b.end.id; });

  struct Link {
    uint32_t parent, cp, child;
  };
  std::vector<Link> links;
  t.nodes.emplace_back();         // root
  std::vector<uint32_t> path{0};  // nodes from the root to the current one
  const std::vector<uint32_t>* prev = nullptr;
  const auto close_to = [&](size_t depth) {
    while (path.size() > depth + 1) {
      t.nodes[path.back()].sub_end = static_cast<uint32_t>(t.order.size());
      path.pop_back();
    }
  };
  t.pos_of.assign(static_cast<size_t>(t.n_vocab), -1);
  for (const Item& item : items) {
    size_t common = 0;
    if (prev != nullptr) {
      while (common < prev->size() && common < item.cps.size() && (*prev)[common] == item.cps[common]) ++common;
    }
    close_to(common);
    for (size_t d = common; d < item.cps.size(); ++d) {
      const auto child = static_cast<uint32_t>(t.nodes.size());
      Impl::Node node;
      node.sub_begin = node.own_end = static_cast<uint32_t>(t.order.size());
      t.nodes.push_back(node);
      links.push_back({path.back(), item.cps[d], child});
      path.push_back(child);
    }
    t.pos_of[item.end.id] = static_cast<int32_t>(t.order.size());
    t.order.push_back(item.end);
    t.nodes[path.back()].own_end = static_cast<uint32_t>(t.order.size());
    prev = &item.cps;
  }
  close_to(0);
  t.nodes[0].sub_end = static_cast<uint32_t>(t.order.size());
  // Children were created in code-point order; group them by parent.
  std::stable_sort(links.begin(), links.end(), [](const Link& a, const Link& b) { return a.parent < b.parent; });
  t.edges.reserve(links.size());
  for (size_t i = 0; i < links.size();) {
    Impl::Node& parent = t.nodes[links[i].parent];
    parent.edge_begin = static_cast<uint32_t>(t.edges.size());
    const uint32_t p = links[i].parent;
    for (; i < links.size() && links[i].parent == p; ++i) t.edges.push_back({links[i].cp, links[i].child});
    parent.edge_end = static_cast<uint32_t>(t.edges.size());
  }
}

TokenTable::~TokenTable() = default;

// ---------------------------------------------------------------------------
struct Matcher::Impl {
  struct State {
    std::vector<Stack> stacks;
    Partial partial;
    bool awaiting = false;
    std::string buffer;  // lazy: text generated while awaiting the trigger
    std::vector<std::pair<int32_t, std::pair<size_t, size_t>>> buffer_tokens;  // token, [start, end) in buffer
  };
  // A canonical (sorted, unique) set of stacks, interned. A code point takes
  // each stack whose char class matches it to the same successors whatever
  // the code point, so transitions are memoized by the mask of matching
  // classes (and directly for ASCII).
  struct StackSet {
    std::vector<Stack> stacks;
    std::vector<uint32_t> char_stacks;      // indices of the stacks with a char class on top
    std::vector<const Element*> char_tops;  // their tops
    std::vector<const Element*> token_tops;
    std::array<int32_t, 128> ascii_next;            // -2: not computed yet, -1: no stack survives
    std::unordered_map<uint64_t, int32_t> by_mask;  // matching char_tops bits -> next set
    std::vector<uint64_t> allowed;                  // apply() result from this state (empty: not cached)
  };
  static constexpr size_t kMaxSets = 20000;         // memo bound on long generations
  static constexpr size_t kMaxCachedResults = 256;  // apply() results kept (n_vocab bits each)

  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenTable> table;
  LazyOptions lazy;
  std::vector<TriggerPattern> patterns;
  State state;

  std::deque<StackSet> sets;
  std::unordered_map<std::string, int32_t> set_ids;
  std::unordered_map<uint64_t, int32_t> next_cache;  // (set << 32 | cp), sets with > 64 char tops
  size_t cached_results = 0;
  std::vector<uint64_t> allowed;  // bit per token id

  void allow(int32_t id) { allowed[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  bool is_allowed(int32_t id) const { return (allowed[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }

  const TokenTable::Impl& t() const { return table->impl(); }
  const std::vector<Rule>& rules() const { return grammar->rules(); }

  void check_id(int32_t token) const {
    if (token < 0 || token >= t().n_vocab) {
      throw Error("grammar: token id " + std::to_string(token) + " is outside the vocabulary (" +
                  std::to_string(t().n_vocab) + " tokens)");
    }
  }

  int32_t intern(std::vector<Stack> stacks) {
    if (stacks.empty()) return -1;
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    std::string key;
    for (const Stack& s : stacks) {
      key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(const Element*));
      key.append(sizeof(const Element*), '\0');  // a null pointer separates stacks
    }
    const auto it = set_ids.find(key);
    if (it != set_ids.end()) return it->second;
    StackSet set;
    for (size_t i = 0; i < stacks.size(); ++i) {
      const Stack& s = stacks[i];
      if (s.empty()) continue;
      if (is_token_element(s.back())) {
        set.token_tops.push_back(s.back());
      } else {
        set.char_stacks.push_back(static_cast<uint32_t>(i));
        set.char_tops.push_back(s.back());
      }
    }
    set.stacks = std::move(stacks);
    set.ascii_next.fill(-2);
    const auto id = static_cast<int32_t>(sets.size());
    sets.push_back(std::move(set));
    set_ids.emplace(std::move(key), id);
    return id;
  }

  int32_t transition(int32_t set_id, uint32_t cp) {
    StackSet& set = sets[set_id];  // a deque: stays valid while intern() appends
    if (cp < 128 && set.ascii_next[cp] != -2) return set.ascii_next[cp];
    int32_t id;
    if (set.char_tops.size() <= 64) {
      uint64_t mask = 0;
      for (size_t i = 0; i < set.char_tops.size(); ++i) {
        if (match_char(set.char_tops[i], cp).first) mask |= uint64_t{1} << i;
      }
      if (mask == 0) {
        id = -1;
      } else if (const auto it = set.by_mask.find(mask); it != set.by_mask.end()) {
        id = it->second;
      } else {
        std::vector<Stack> next;
        for (size_t i = 0; i < set.char_tops.size(); ++i) {
          if ((mask >> i) & 1) accept_chr(rules(), set.stacks[set.char_stacks[i]], cp, next);
        }
        id = intern(std::move(next));
        set.by_mask.emplace(mask, id);
      }
    } else {
      const uint64_t key = (static_cast<uint64_t>(set_id) << 32) | cp;
      if (const auto it = next_cache.find(key); it != next_cache.end()) {
        id = it->second;
      } else {
        std::vector<Stack> next;
        for (const Stack& s : set.stacks) accept_chr(rules(), s, cp, next);
        id = intern(std::move(next));
        next_cache.emplace(key, id);
      }
    }
    if (cp < 128) set.ascii_next[cp] = id;
    return id;
  }

  void walk(uint32_t node_index, int32_t set_id) {
    const TokenTable::Impl& tab = t();
    const TokenTable::Impl::Node& node = tab.nodes[node_index];
    const StackSet& set = sets[set_id];
    // tokens ending here: any stack takes a complete piece; an unfinished
    // last character needs a char class some completion can match
    for (uint32_t i = node.sub_begin; i < node.own_end; ++i) {
      const TokenTable::Impl::End& e = tab.order[i];
      if (e.partial.n_remain == 0) {
        allow(e.id);
      } else {
        for (const Element* top : set.char_tops) {
          if (match_partial_char(top, e.partial)) {
            allow(e.id);
            break;
          }
        }
      }
    }
    // a token element on top decides by id for every token with code points left
    for (const Element* top : set.token_tops) {
      if (top->type == ElementType::kToken) {
        const int32_t p = top->value < static_cast<uint32_t>(tab.n_vocab) ? tab.pos_of[top->value] : -1;
        if (p >= static_cast<int32_t>(node.own_end) && p < static_cast<int32_t>(node.sub_end))
          allow(static_cast<int32_t>(top->value));
      } else {
        for (uint32_t i = node.own_end; i < node.sub_end; ++i) {
          if (static_cast<uint32_t>(tab.order[i].id) != top->value) allow(tab.order[i].id);
        }
      }
    }
    if (sets[set_id].char_tops.empty()) return;
    for (uint32_t e = node.edge_begin; e < node.edge_end; ++e) {
      const int32_t next = transition(set_id, tab.edges[e].cp);
      if (next >= 0) walk(tab.edges[e].node, next);
    }
  }

  // libllama's per-candidate rejection, used when an unfinished sequence is
  // carried over (the decoding then depends on it).
  bool accepts(const std::vector<Stack>& stacks, const uint32_t* cps, size_t n, Partial p, int32_t id) const {
    for (const Stack& s : stacks) {
      if (s.empty()) {
        if (n == 0 && p.n_remain == 0) return true;
        continue;
      }
      const Element* top = s.back();
      if (is_token_element(top)) {
        if (n == 0 ? p.n_remain == 0 : match_token(top, id)) return true;
        continue;
      }
      if (n == 0) {
        if (p.n_remain == 0 || match_partial_char(top, p)) return true;
        continue;
      }
      std::vector<Stack> next;
      accept_chr(rules(), s, cps[0], next);
      if (!next.empty() && accepts(next, cps + 1, n - 1, p, id)) return true;
    }
    return false;
  }

  // One candidate checked on its own (libllama's per-candidate rule); cheaper
  // than the trie walk when only a few candidates are asked about, e.g. the
  // sampled token in common_sampler's "check the pick first" path.
  bool candidate_allowed(int32_t id, bool allow_eog) const {
    if (t().eog[id]) return allow_eog;
    const std::string_view piece = c_view(t().pieces[id]);
    if (piece.empty()) return false;
    const Decoded d = decode_utf8(piece, state.partial);
    if (d.partial.n_remain < 0) return false;
    return accepts(state.stacks, d.cps.data(), d.cps.size(), d.partial, id);
  }

  // Fills `allowed` for non-end-of-generation tokens.
  void compute_allowed() {
    const TokenTable::Impl& tab = t();
    allowed.assign((static_cast<size_t>(tab.n_vocab) + 63) / 64, 0);
    if (state.partial.n_remain > 0) {
      for (int32_t id : tab.continuation_ids) {
        const Decoded d = decode_utf8(c_view(tab.pieces[id]), state.partial);
        if (d.partial.n_remain < 0) continue;
        if (accepts(state.stacks, d.cps.data(), d.cps.size(), d.partial, id)) allow(id);
      }
      return;
    }
    if (sets.size() > kMaxSets) {
      sets.clear();
      set_ids.clear();
      next_cache.clear();
      cached_results = 0;
    }
    const int32_t root = intern(state.stacks);
    if (root < 0) return;
    if (!sets[root].allowed.empty()) {  // generation often comes back to a state (inside a string ...)
      allowed = sets[root].allowed;
      return;
    }
    walk(0, root);
    if (cached_results < kMaxCachedResults) {
      sets[root].allowed = allowed;
      ++cached_results;
    }
  }

  bool any_empty(const State& s) const {
    return std::any_of(s.stacks.begin(), s.stacks.end(), [](const Stack& st) { return st.empty(); });
  }

  // llama_grammar_accept_token: token elements take the id, char classes the
  // piece's code points.
  void accept_piece(State& s, int32_t token, const std::string& piece) const {
    const Decoded d = decode_utf8(c_view(piece), s.partial);
    std::vector<Stack> out;
    for (const Stack& stack : s.stacks) {
      if (stack.empty()) continue;
      const Element* top = stack.back();
      if (is_token_element(top)) {
        if (match_token(top, token)) {
          Stack next(stack.begin(), stack.end() - 1);
          if (!is_end_of_sequence(top + 1)) next.push_back(top + 1);
          advance_stack(rules(), next, out);
        }
        continue;
      }
      std::vector<Stack> cur{stack};
      for (uint32_t cp : d.cps) {
        std::vector<Stack> next;
        for (const Stack& c : cur) accept_chr(rules(), c, cp, next);
        cur = std::move(next);
        if (cur.empty()) break;
      }
      for (Stack& c : cur) add_unique(out, std::move(c));
    }
    if (out.empty()) {
      throw Error("grammar: token " + std::to_string(token) + " ('" + piece + "') is not allowed by the grammar here");
    }
    s.stacks = std::move(out);
    s.partial = d.partial;
  }

  void accept(int32_t token) {
    check_id(token);
    const std::string& piece = t().pieces[token];
    State s = state;  // committed only when the grammar takes the token
    if (s.awaiting) {
      if (std::find(lazy.trigger_tokens.begin(), lazy.trigger_tokens.end(), token) != lazy.trigger_tokens.end()) {
        s.awaiting = false;
        s.buffer.clear();
        accept_piece(s, token, piece);
        state = std::move(s);
        return;
      }
      s.buffer_tokens.push_back({token, {s.buffer.size(), s.buffer.size() + piece.size()}});
      s.buffer += piece;
      for (const TriggerPattern& p : patterns) {
        const size_t start = p.find(s.buffer);
        if (start == std::string::npos) continue;
        s.awaiting = false;
        // replay the tokens that overlap [start, end), the first one cut at start
        for (const auto& [tok, range] : s.buffer_tokens) {
          if (range.second <= start) continue;
          const size_t from = std::max(range.first, start);
          accept_piece(s, tok, s.buffer.substr(from, range.second - from));
        }
        s.buffer.clear();
        s.buffer_tokens.clear();
        break;
      }
      state = std::move(s);
      return;
    }
    if (t().eog[token]) {
      if (any_empty(s)) return;
      throw Error("grammar: end-of-generation token " + std::to_string(token) + " before the grammar is complete");
    }
    accept_piece(s, token, piece);
    state = std::move(s);
  }

  void reset() {
    state = State{};
    state.stacks = initial_stacks(*grammar);
    state.awaiting = lazy.lazy;
  }
};

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, const tok::Tokenizer& tokenizer, LazyOptions lazy)
    : Matcher(std::move(grammar), tokenizer, std::make_shared<const TokenTable>(tokenizer), std::move(lazy)) {}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, const tok::Tokenizer& tokenizer,
                 std::shared_ptr<const TokenTable> table, LazyOptions lazy)
    : impl_(std::make_unique<Impl>()) {
  if (!grammar) throw Error("grammar: no grammar given to the matcher");
  if (!table || table->impl().n_vocab != tokenizer.vocab().n_tokens()) {
    throw Error("grammar: the token table does not belong to this tokenizer");
  }
  impl_->grammar = std::move(grammar);
  impl_->table = std::move(table);
  impl_->lazy = std::move(lazy);
  for (const std::string& p : impl_->lazy.trigger_patterns) impl_->patterns.emplace_back(p);
  impl_->reset();
}

Matcher::~Matcher() = default;

void Matcher::apply(TokenData* candidates, size_t n) {
  if (impl_->state.awaiting) return;
  for (size_t i = 0; i < n; ++i) impl_->check_id(candidates[i].id);
  const bool allow_eog = impl_->any_empty(impl_->state);
  constexpr size_t kFewCandidates = 16;
  if (n <= kFewCandidates) {
    for (size_t i = 0; i < n; ++i) {
      if (!impl_->candidate_allowed(candidates[i].id, allow_eog)) candidates[i].logit = -INFINITY;
    }
    return;
  }
  impl_->compute_allowed();
  const auto& eog = impl_->t().eog;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = candidates[i].id;
    if (eog[id] ? !allow_eog : !impl_->is_allowed(id)) candidates[i].logit = -INFINITY;
  }
}

void Matcher::apply(std::span<float> logits) {
  if (impl_->state.awaiting) return;
  if (logits.size() > static_cast<size_t>(impl_->t().n_vocab)) {
    throw Error("grammar: " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                std::to_string(impl_->t().n_vocab) + " tokens");
  }
  const bool allow_eog = impl_->any_empty(impl_->state);
  impl_->compute_allowed();
  const auto& eog = impl_->t().eog;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (eog[id] ? !allow_eog : !impl_->is_allowed(static_cast<int32_t>(id))) logits[id] = -INFINITY;
  }
}

void Matcher::accept(int32_t token) { impl_->accept(token); }

bool Matcher::is_complete() const { return impl_->state.awaiting || impl_->any_empty(impl_->state); }

bool Matcher::awaiting_trigger() const { return impl_->state.awaiting; }

void Matcher::reset() { impl_->reset(); }

}  // namespace strix::grammar
