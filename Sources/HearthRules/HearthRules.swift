/// The Firebase security-rules language: lexer → Pratt parser → AST → evaluator.
///
/// Compile a rules file with ``Ruleset/compile(_:fileName:)``, then decide requests with
/// ``Ruleset/evaluate(_:documents:ledger:options:)``. Nothing in this module performs I/O:
/// documents read by `get()`/`exists()` come from a ``RulesDocumentLookup`` the caller
/// implements.
public enum HearthRules {
    /// Firebase's ruleset size limit (256 KB of source).
    public static let maxSourceBytes = 256 * 1024
}
