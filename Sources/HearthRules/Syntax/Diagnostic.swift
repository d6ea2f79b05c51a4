/// A problem found while compiling a rules file. Every diagnostic carries a source range.
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable {
        case error, warning
    }

    public var severity: Severity
    public var message: String
    public var range: SourceRange

    public init(_ severity: Severity, _ message: String, at range: SourceRange) {
        self.severity = severity
        self.message = message
        self.range = range
    }

    public var description: String { "\(range.start.line):\(range.start.column): \(message)" }

    /// `file:line:col: message`, then the source line and a caret line under the range.
    /// Warnings say so after the location.
    public func rendered(in source: RulesSource) -> String {
        let kind = severity == .warning ? "warning: " : ""
        return "\(source.location(range)): \(kind)\(message)\n\(source.excerpt(range))"
    }
}

/// A ruleset that failed to compile: every error (and warning) found, renderable with carets.
public struct RulesCompileError: Error, Sendable, CustomStringConvertible {
    public var source: RulesSource
    public var diagnostics: [Diagnostic]

    public var errors: [Diagnostic] { diagnostics.filter { $0.severity == .error } }

    /// All diagnostics, each as `file:line:col: message` + source line + caret line.
    public var rendered: String { diagnostics.map { $0.rendered(in: source) }.joined(separator: "\n") }
    public var description: String { rendered }
}
