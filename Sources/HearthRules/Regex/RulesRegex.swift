internal import Synchronization

/// A compiled regular expression with RE2 semantics, run by a Pike VM: time is linear in the
/// input for every pattern (no backtracking), matches are leftmost-first like RE2's, and the
/// program size is bounded. `matches` is a whole-string match, as in Firebase.
final class RulesRegex: Sendable {
    struct SyntaxError: Error {
        var message: String
    }

    enum Inst {
        case char(UInt32)
        case charFold(UInt32)
        case set(Int)
        case split(Int, Int)
        case jump(Int)
        case save(Int)
        case assert(RegexAssertion)
        case match
    }

    static let maxProgram = 20_000

    let program: [Inst]
    let sets: [CharSet]
    let groupCount: Int
    let names: [String: Int]

    private init(program: [Inst], sets: [CharSet], groupCount: Int, names: [String: Int]) {
        self.program = program
        self.sets = sets
        self.groupCount = groupCount
        self.names = names
    }

    static func compile(_ pattern: String) throws(SyntaxError) -> RulesRegex {
        var parser = RegexParser(pattern)
        let node = try parser.parse()
        var c = Compiler()
        c.emit(.save(0))
        try c.compile(node)
        c.emit(.save(1))
        c.emit(.match)
        if c.program.count > maxProgram { throw SyntaxError(message: "pattern too large") }
        return RulesRegex(program: c.program, sets: c.sets, groupCount: parser.captureCount, names: parser.names)
    }

    private static let cache = Mutex<[String: RulesRegex]>([:])

    /// Compiled patterns are shared (rules use a handful of constant patterns).
    static func cached(_ pattern: String) throws(SyntaxError) -> RulesRegex {
        if let hit = cache.withLock({ $0[pattern] }) { return hit }
        let re = try compile(pattern)
        cache.withLock { c in
            if c.count >= 512 { c.removeAll() }
            c[pattern] = re
        }
        return re
    }

    struct Compiler {
        var program: [Inst] = []
        var sets: [CharSet] = []

        mutating func emit(_ i: Inst) { program.append(i) }

        mutating func compile(_ node: RegexNode) throws(SyntaxError) {
            if program.count > RulesRegex.maxProgram { throw SyntaxError(message: "pattern too large") }
            switch node {
            case .empty: break
            case .literal(let c, let fold):
                if fold, !RegexFold.variants(c).isEmpty { emit(.charFold(RegexFold.fold(c))) } else { emit(.char(c)) }
            case .set(let s):
                sets.append(s)
                emit(.set(sets.count - 1))
            case .concat(let items):
                for i in items { try compile(i) }
            case .alternate(let branches):
                var jumps: [Int] = []
                for (k, b) in branches.enumerated() {
                    if k < branches.count - 1 {
                        let split = program.count
                        emit(.split(split + 1, -1))
                        try compile(b)
                        jumps.append(program.count)
                        emit(.jump(-1))
                        program[split] = .split(split + 1, program.count)
                    } else {
                        try compile(b)
                    }
                }
                for j in jumps { program[j] = .jump(program.count) }
            case .capture(let inner, let index):
                emit(.save(2 * index))
                try compile(inner)
                emit(.save(2 * index + 1))
            case .assertion(let a):
                emit(.assert(a))
            case .repeat(let inner, let min, let max, let greedy):
                for _ in 0..<min { try compile(inner) }
                if let max {
                    // (x(x(x)?)?)? for the optional part.
                    var holes: [Int] = []
                    for _ in min..<max {
                        let split = program.count
                        emit(.split(-1, -1))
                        holes.append(split)
                        program[split] = .split(split + 1, -1)
                        try compile(inner)
                    }
                    let end = program.count
                    for h in holes {
                        program[h] = greedy ? .split(h + 1, end) : .split(end, h + 1)
                    }
                } else {
                    let split = program.count
                    emit(.split(-1, -1))
                    try compile(inner)
                    emit(.jump(split))
                    let end = program.count
                    program[split] = greedy ? .split(split + 1, end) : .split(end, split + 1)
                }
            }
        }
    }

    // MARK: Matching

    /// Whole-string match (Firebase's `string.matches`).
    func matchesWhole(_ s: String) -> Bool {
        let input = s.unicodeScalars.map(\.value)
        return run(input, from: 0, anchored: true, captures: false) != nil
    }

    /// The leftmost-first match at or after `from`: capture positions (group 0 first), in
    /// code-point indexes, -1 for groups that did not participate.
    func find(_ input: [UInt32], from: Int) -> [Int]? {
        run(input, from: from, anchored: false, captures: true)
    }

    /// Every match, found as Java's `Matcher.find` does: after an empty match the next
    /// search starts one character later.
    func allMatches(_ input: [UInt32]) -> [[Int]] {
        var out: [[Int]] = []
        var from = 0
        while from <= input.count, let m = find(input, from: from) {
            out.append(m)
            from = m[1] == m[0] ? m[1] + 1 : m[1]
        }
        return out
    }

    /// `string.split(re)`, as Google's implementation does (measured): no match gives the
    /// whole string; trailing empty strings are removed but one element always remains
    /// (`'a.b'.split('.') == ['']`); a leading empty match gives a leading "".
    func split(_ s: String) -> [String] {
        let input = s.unicodeScalars.map(\.value)
        let matches = allMatches(input)
        var pieces: [String] = []
        var index = 0
        for m in matches {
            pieces.append(Self.string(input[index..<m[0]]))
            index = m[1]
        }
        if index == 0 { return [s] }
        pieces.append(Self.string(input[index...]))
        while pieces.count > 1, let last = pieces.last, last.isEmpty { pieces.removeLast() }
        return pieces
    }

    /// `string.replace(re, sub)`: every match replaced; `$1`…`$9`, `${name}` insert groups,
    /// `\x` inserts `x`.
    func replaceAll(_ s: String, with sub: String) -> String {
        let input = s.unicodeScalars.map(\.value)
        let matches = allMatches(input)
        if matches.isEmpty { return s }
        let subChars = sub.unicodeScalars.map(\.value)
        var out: [UInt32] = []
        var index = 0
        for m in matches {
            out += input[index..<m[0]]
            var i = 0
            while i < subChars.count {
                let c = subChars[i]
                if c == 0x5C, i + 1 < subChars.count {  // backslash
                    out.append(subChars[i + 1])
                    i += 2
                } else if c == 0x24, i + 1 < subChars.count, subChars[i + 1] >= 48, subChars[i + 1] <= 57 {  // $n
                    var g = Int(subChars[i + 1] - 48)
                    i += 2
                    while i < subChars.count, subChars[i] >= 48, subChars[i] <= 57, g * 10 + Int(subChars[i] - 48) <= groupCount {
                        g = g * 10 + Int(subChars[i] - 48)
                        i += 1
                    }
                    if g <= groupCount, m[2 * g] >= 0 { out += input[m[2 * g]..<m[2 * g + 1]] }
                } else if c == 0x24, i + 1 < subChars.count, subChars[i + 1] == 0x7B,  // ${name}
                          let close = subChars[(i + 2)...].firstIndex(of: 0x7D) {
                    let name = Self.string(subChars[(i + 2)..<close])
                    if let g = names[name], m[2 * g] >= 0 { out += input[m[2 * g]..<m[2 * g + 1]] }
                    i = close + 1
                } else {
                    out.append(c)
                    i += 1
                }
            }
            index = m[1]
        }
        out += input[index...]
        return Self.string(out[...])
    }

    static func string(_ scalars: ArraySlice<UInt32>) -> String {
        var s = ""
        s.unicodeScalars.append(contentsOf: scalars.compactMap(Unicode.Scalar.init))
        return s
    }

    static func isWord(_ c: UInt32) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95
    }

    func assertionHolds(_ a: RegexAssertion, _ input: [UInt32], _ pos: Int) -> Bool {
        switch a {
        case .beginText: return pos == 0
        case .endText: return pos == input.count
        case .beginLine: return pos == 0 || input[pos - 1] == 10
        case .endLine: return pos == input.count || input[pos] == 10
        case .wordBoundary, .notWordBoundary:
            let before = pos > 0 && Self.isWord(input[pos - 1])
            let after = pos < input.count && Self.isWord(input[pos])
            return (before != after) == (a == .wordBoundary)
        }
    }

    /// A thread list with one entry per program counter at most (the Pike VM invariant
    /// that keeps matching linear).
    struct ThreadList {
        var pcs: [Int] = []
        var caps: [[Int]] = []
        var mark: [Int]
        var generation = 1

        init(size: Int) { mark = Array(repeating: 0, count: size) }

        mutating func clear() {
            pcs.removeAll(keepingCapacity: true)
            caps.removeAll(keepingCapacity: true)
            generation += 1
        }
    }

    /// Adds the thread at `pc` and everything reachable through empty-width instructions, in
    /// priority order.
    func addThread(_ list: inout ThreadList, _ pc0: Int, _ caps0: [Int], _ input: [UInt32], _ pos: Int, _ stack: inout [(Int, [Int])]) {
        stack.append((pc0, caps0))
        while let (pc, caps) = stack.popLast() {
            if list.mark[pc] == list.generation { continue }
            list.mark[pc] = list.generation
            switch program[pc] {
            case .jump(let t):
                stack.append((t, caps))
            case .split(let a, let b):
                stack.append((b, caps))
                stack.append((a, caps))
            case .save(let n):
                if n < caps.count {
                    var c = caps
                    c[n] = pos
                    stack.append((pc + 1, c))
                } else {
                    stack.append((pc + 1, caps))
                }
            case .assert(let a):
                if assertionHolds(a, input, pos) { stack.append((pc + 1, caps)) }
            default:
                list.pcs.append(pc)
                list.caps.append(caps)
            }
        }
    }

    func run(_ input: [UInt32], from: Int, anchored: Bool, captures: Bool) -> [Int]? {
        var work = 0
        return run(input, from: from, anchored: anchored, captures: captures, work: &work)
    }

    /// The Pike VM. `work` counts thread steps: each (input position, instruction) pair runs
    /// at most once, so `work ≤ (input.count + 1) × program.count` — linear in the input.
    func run(_ input: [UInt32], from: Int, anchored: Bool, captures: Bool, work: inout Int) -> [Int]? {
        let ncap = captures ? 2 * (groupCount + 1) : 0
        var clist = ThreadList(size: program.count)
        var nlist = ThreadList(size: program.count)
        var stack: [(Int, [Int])] = []
        var matched: [Int]? = nil
        var pos = from
        let empty = Array(repeating: -1, count: ncap)
        while true {
            if matched == nil && (!anchored || pos == from) {
                addThread(&clist, 0, empty, input, pos, &stack)
            }
            if clist.pcs.isEmpty && (matched != nil || anchored || pos >= input.count) { break }
            let c: UInt32? = pos < input.count ? input[pos] : nil
            var i = 0
            while i < clist.pcs.count {
                work += 1
                let pc = clist.pcs[i]
                switch program[pc] {
                case .match:
                    if anchored && pos != input.count { break }
                    matched = clist.caps[i]
                    if matched!.isEmpty { matched = [from, pos] }
                    i = clist.pcs.count  // cut lower-priority threads
                    continue
                case .char(let x):
                    if c == x { addThread(&nlist, pc + 1, clist.caps[i], input, pos + 1, &stack) }
                case .charFold(let x):
                    if let c, RegexFold.fold(c) == x { addThread(&nlist, pc + 1, clist.caps[i], input, pos + 1, &stack) }
                case .set(let k):
                    if let c, sets[k].contains(c) { addThread(&nlist, pc + 1, clist.caps[i], input, pos + 1, &stack) }
                default:
                    break
                }
                i += 1
            }
            if pos >= input.count { break }
            swap(&clist, &nlist)
            nlist.clear()
            pos += 1
        }
        return matched
    }
}
