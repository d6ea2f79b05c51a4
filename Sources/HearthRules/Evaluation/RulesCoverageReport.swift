public import HearthCore

/// A coverage report for one ruleset: every expression with how often it was evaluated and
/// what it gave, rendered as JSON or as a self-contained HTML page (the rules source with each
/// expression highlighted). Google's emulator serves the same information as `ruleCoverage`,
/// truncated; this report has no size limit.
///
/// ```swift
/// var coverage = RulesCoverage(expressionCount: ruleset.expressions.count)
/// for request in requests {
///     let d = ruleset.evaluate(request, ledger: &ledger, options: RulesEvaluationOptions(recordCoverage: true))
///     if let c = d.coverage { coverage.merge(c) }
/// }
/// let report = RulesCoverageReport(ruleset: ruleset, coverage: coverage)
/// try report.html().write(toFile: "coverage.html", …)
/// ```
public struct RulesCoverageReport: Sendable {
    /// What an expression gave over all its evaluations.
    public enum Status: String, Sendable, CaseIterable {
        /// Never evaluated.
        case unevaluated
        /// Evaluated, always `true`.
        case alwaysTrue = "true"
        /// Evaluated, always `false`.
        case alwaysFalse = "false"
        /// Evaluated, `true` at least once and `false` at least once.
        case both
        /// Evaluated, at least one evaluation was an error.
        case error
        /// Evaluated, only non-boolean values (and no error).
        case value
    }

    public let ruleset: Ruleset
    public let coverage: RulesCoverage

    public init(ruleset: Ruleset, coverage: RulesCoverage) {
        self.ruleset = ruleset
        self.coverage = coverage
    }

    /// Every expression in source order (outer before inner), never-evaluated ones included.
    /// The name of a called function (`f` in `f(x)`, `size` in `x.size()`) is not an
    /// expression of its own and is left out unless the evaluator counted it.
    public var entries: [RulesCoverage.Entry] {
        var callees = Set<Int>()
        for e in ruleset.expressions {
            if case .call(let f, _) = e.kind {
                switch f.kind {
                case .identifier, .member: callees.insert(f.id)
                default: break
                }
            }
        }
        return coverage.entries(for: ruleset).filter { !callees.contains($0.id) || $0.counts.evaluations > 0 }
    }

    public static func status(_ c: RulesCoverage.Counts) -> Status {
        if c.evaluations == 0 { return .unevaluated }
        if c.errorCount > 0 { return .error }
        if c.trueCount > 0 && c.falseCount > 0 { return .both }
        if c.trueCount > 0 { return .alwaysTrue }
        if c.falseCount > 0 { return .alwaysFalse }
        return .value
    }

    /// Expressions in the report, and how many were evaluated at least once.
    public var summary: (expressions: Int, evaluated: Int) {
        let e = entries
        return (e.count, e.filter { $0.counts.evaluations > 0 }.count)
    }

    // MARK: JSON

    /// The report as JSON:
    ///
    /// ```json
    /// {"file": "firestore.rules", "expressions": 12, "evaluated": 9,
    ///  "source": "…the rules text…",
    ///  "report": [{"id": 3, "text": "request.auth != null", "status": "both",
    ///              "start": {"line": 5, "column": 23, "offset": 120}, "end": {…},
    ///              "evaluations": 4, "true": 3, "false": 1, "error": 0, "value": 0}, …]}
    /// ```
    public func json() -> String { jsonValue().serialized() }

    public func jsonValue() -> JSON {
        let e = entries
        func position(_ p: SourcePosition) -> JSON {
            .object([("line", .number(p.line)), ("column", .number(p.column)), ("offset", .number(p.offset))])
        }
        let report: [JSON] = e.map { x in
            .object([
                ("id", .number(x.id)), ("text", .string(x.text)), ("status", .string(Self.status(x.counts).rawValue)),
                ("start", position(x.range.start)), ("end", position(x.range.end)),
                ("evaluations", .number(x.counts.evaluations)), ("true", .number(x.counts.trueCount)),
                ("false", .number(x.counts.falseCount)), ("error", .number(x.counts.errorCount)),
                ("value", .number(x.counts.valueCount)),
            ])
        }
        return .object([
            ("file", .string(ruleset.source.name)),
            ("expressions", .number(e.count)),
            ("evaluated", .number(e.filter { $0.counts.evaluations > 0 }.count)),
            ("source", .string(ruleset.source.text)),
            ("report", .array(report)),
        ])
    }

    // MARK: HTML

    /// A self-contained HTML page (inline CSS, no scripts): the rules source with every
    /// expression highlighted by its status, counts on hover, and a table of the expressions.
    public func html() -> String {
        let e = entries
        let bytes = ruleset.source.bytes
        var out = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <title>Rules coverage: \(Self.escape(ruleset.source.name))</title>
            <style>
            body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
            pre { font: 13px/1.5 ui-monospace, Menlo, Consolas, monospace; background: #fafafa; border: 1px solid #ddd; padding: 1em; overflow-x: auto; }
            pre span.x { border-radius: 2px; }
            .ln { display: inline-block; width: 3.5em; color: #999; user-select: none; background: #fafafa; }
            .unevaluated { background: #e2e2e2; }
            .true { background: #c6efce; }
            .false { background: #ffdcae; }
            .both { background: #cfe0ff; }
            .error { background: #ffc4c4; text-decoration: underline wavy #c00; }
            .value { background: transparent; }
            .legend .value { border-bottom: 1px dotted #888; }
            pre span.x:hover { outline: 1px solid #333; }
            table { border-collapse: collapse; font-size: 13px; }
            td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
            td.n { text-align: right; }
            code { font: 12px ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; }
            .legend span { padding: 1px 6px; margin-right: 6px; }
            </style></head><body>

            """
        let evaluated = e.filter { $0.counts.evaluations > 0 }.count
        let pct = e.isEmpty ? 100 : evaluated * 100 / e.count
        out += "<h1>Rules coverage: \(Self.escape(ruleset.source.name))</h1>\n"
        out += "<p>\(evaluated) of \(e.count) expressions evaluated (\(pct)%). Hover over an expression for its counts; an inner expression's colour covers its parent's.</p>\n"
        out += "<p class=\"legend\">"
        for s in Status.allCases { out += "<span class=\"\(s.rawValue)\">\(Self.label(s))</span>" }
        out += "</p>\n<pre>"

        // Expression ranges nest (an operator's range covers its operands): open a span at
        // each start and close it at its end, innermost last.
        var opens: [Int: [RulesCoverage.Entry]] = [:]
        for x in e where x.range.end.offset > x.range.start.offset { opens[x.range.start.offset, default: []].append(x) }
        var stack: [Int] = []  // end offsets of open spans
        var line = 1
        out += "<span class=\"ln\">1</span>"
        var i = 0
        var segmentStart = 0
        func flush(_ upTo: Int) {
            if upTo > segmentStart {
                out += Self.escape(String(decoding: bytes[segmentStart..<upTo], as: UTF8.self))
            }
            segmentStart = upTo
        }
        while i <= bytes.count {
            var boundary = false
            if let top = stack.last, top <= i { boundary = true }
            if opens[i] != nil { boundary = true }
            if boundary {
                flush(i)
                while let top = stack.last, top <= i {
                    out += "</span>"
                    stack.removeLast()
                }
                for x in opens[i] ?? [] {
                    // Clamp to the enclosing span so the HTML stays well nested.
                    let end = min(x.range.end.offset, stack.last ?? Int.max, bytes.count)
                    guard end > i else { continue }
                    out += "<span class=\"x \(Self.status(x.counts).rawValue)\" title=\"\(Self.escape(Self.tooltip(x)))\">"
                    stack.append(end)
                }
            }
            if i == bytes.count { break }
            if bytes[i] == 10 {
                flush(i + 1)
                line += 1
                if i + 1 < bytes.count { out += "<span class=\"ln\">\(line)</span>" }
            }
            i += 1
        }
        flush(bytes.count)
        out += String(repeating: "</span>", count: stack.count)
        out += "</pre>\n<h2>Expressions</h2>\n<table><tr><th>location</th><th>expression</th><th>status</th>"
            + "<th>evaluations</th><th>true</th><th>false</th><th>error</th><th>other value</th></tr>\n"
        for x in e {
            let c = x.counts
            out += "<tr><td>\(x.range.start.line):\(x.range.start.column)</td><td><code>\(Self.escape(Self.shortened(x.text)))</code></td>"
                + "<td class=\"\(Self.status(c).rawValue)\">\(Self.label(Self.status(c)))</td>"
                + "<td class=\"n\">\(c.evaluations)</td><td class=\"n\">\(c.trueCount)</td><td class=\"n\">\(c.falseCount)</td>"
                + "<td class=\"n\">\(c.errorCount)</td><td class=\"n\">\(c.valueCount)</td></tr>\n"
        }
        out += "</table>\n</body></html>\n"
        return out
    }

    static func label(_ s: Status) -> String {
        switch s {
        case .unevaluated: "never evaluated"
        case .alwaysTrue: "always true"
        case .alwaysFalse: "always false"
        case .both: "true and false"
        case .error: "errored"
        case .value: "non-boolean value"
        }
    }

    static func tooltip(_ x: RulesCoverage.Entry) -> String {
        let c = x.counts
        if c.evaluations == 0 { return "\(x.range.start.line):\(x.range.start.column) never evaluated" }
        var parts = ["\(c.evaluations) evaluation\(c.evaluations == 1 ? "" : "s")"]
        if c.trueCount > 0 { parts.append("\(c.trueCount) true") }
        if c.falseCount > 0 { parts.append("\(c.falseCount) false") }
        if c.errorCount > 0 { parts.append("\(c.errorCount) error\(c.errorCount == 1 ? "" : "s")") }
        if c.valueCount > 0 { parts.append("\(c.valueCount) other value\(c.valueCount == 1 ? "" : "s")") }
        return "\(x.range.start.line):\(x.range.start.column) " + parts.joined(separator: ", ")
    }

    static func shortened(_ s: String) -> String {
        let flat = s.split(whereSeparator: \.isNewline).map { $0.trimmingPrefix(while: \.isWhitespace) }.joined(separator: " ")
        return flat.count > 120 ? String(flat.prefix(117)) + "…" : flat
    }

    /// Escapes text for HTML element content and double-quoted attributes.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for ch in s.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}
