/// Static checks after parsing. Errors reject the ruleset; warnings are reported but the
/// ruleset loads, because Google's compiler accepts those rules and denies at evaluation
/// (unknown variables and functions, wrong arity — measured against the emulator).
struct Checker {
    final class StaticScope {
        let parent: StaticScope?
        var variables: Set<String>
        let functions: [String: FunctionDeclaration]

        init(parent: StaticScope?, variables: Set<String>, functions: [String: FunctionDeclaration]) {
            self.parent = parent
            self.variables = variables
            self.functions = functions
        }

        func hasVariable(_ n: String) -> Bool { variables.contains(n) || (parent?.hasVariable(n) ?? false) }

        func function(_ n: String) -> (FunctionDeclaration, StaticScope)? {
            if let f = functions[n] { return (f, self) }
            return parent?.function(n)
        }
    }

    static let maxParameters = 7
    static let maxBindings = 10

    let version2: Bool
    let service: RulesService?
    var diagnostics: [Diagnostic] = []
    /// Call edges between user functions, for the recursion check.
    var edges: [ObjectIdentifier: [(FunctionDeclaration, SourceRange)]] = [:]
    var declarations: [ObjectIdentifier: FunctionDeclaration] = [:]
    var reportedStack = false
    var depth = 0

    init(version2: Bool, service: RulesService?) {
        self.version2 = version2
        self.service = service
    }

    mutating func error(_ m: String, _ r: SourceRange) { diagnostics.append(Diagnostic(.error, m, at: r)) }

    /// Namespaces cannot be shadowed (Google's compiler: "math is a package and cannot be
    /// used as variable name").
    var packages: Set<String> {
        service == .storage ? Builtins.namespaces : Builtins.namespaces.subtracting(["firestore"])
    }

    mutating func checkName(_ name: String, _ r: SourceRange) {
        if packages.contains(name) { error("\(name) is a package and cannot be used as variable name.", r) }
    }
    mutating func warning(_ m: String, _ r: SourceRange) { diagnostics.append(Diagnostic(.warning, m, at: r)) }

    mutating func check(_ root: RulesBlock) {
        let fileScope = StaticScope(parent: nil, variables: [], functions: root.functions)
        checkFunctions(root.functions, fileScope)
        for service in root.matches {
            let serviceScope = StaticScope(parent: fileScope, variables: [], functions: service.functions)
            checkFunctions(service.functions, serviceScope)
            for m in service.matches { checkMatch(m, serviceScope) }
        }
        checkRecursion()
    }

    mutating func checkMatch(_ block: RulesBlock, _ parent: StaticScope) {
        var names: Set<String> = []
        var recursive = 0
        for (i, seg) in block.pattern.enumerated() {
            switch seg {
            case .literal: continue
            case .single(let n), .recursive(let n):
                if !names.insert(n).inserted { error("The wildcard '\(n)' appears twice in this match path.", block.range) }
                if case .recursive = seg {
                    recursive += 1
                    if !version2 && i != block.pattern.count - 1 {
                        error("Invalid glob match expression. Glob matches are permitted as the last segment in a match "
                              + "declaration path (rules_version '1').", block.range)
                    }
                }
            }
        }
        if recursive > 1 { error("A match path may contain only one recursive wildcard {name=**}.", block.range) }
        for n in names.sorted() { checkName(n, block.range) }
        let scope = StaticScope(parent: parent, variables: names, functions: block.functions)
        checkFunctions(block.functions, scope)
        for a in block.allows {
            if let c = a.condition { checkExpr(c, scope, in: nil) }
        }
        for m in block.matches { checkMatch(m, scope) }
    }

    mutating func checkFunctions(_ functions: [String: FunctionDeclaration], _ scope: StaticScope) {
        for f in functions.values.sorted(by: { $0.range.start < $1.range.start }) {
            declarations[ObjectIdentifier(f)] = f
            if f.parameters.count > Self.maxParameters {
                error("Function '\(f.name)' has \(f.parameters.count) parameters; at most \(Self.maxParameters) are allowed.", f.nameRange)
            }
            if f.bindings.count > Self.maxBindings {
                error("Function '\(f.name)' has \(f.bindings.count) let bindings; at most \(Self.maxBindings) are allowed.", f.nameRange)
            }
            for p in f.parameters { checkName(p, f.range) }
            var inner = StaticScope(parent: scope, variables: Set(f.parameters), functions: [:])
            for b in f.bindings {
                checkName(b.name, b.range)
                checkExpr(b.value, inner, in: f)
                inner = StaticScope(parent: inner, variables: [b.name], functions: [:])
            }
            checkExpr(f.body, inner, in: f)
        }
    }

    mutating func checkExpr(_ e: Expr, _ scope: StaticScope, in function: FunctionDeclaration?) {
        depth += 1
        defer { depth -= 1 }
        guard depth < StackGuard.deep || StackGuard.hasRoom() else {
            if !reportedStack {
                reportedStack = true
                error("Expression is too complex to check on this thread's stack.", e.range)
            }
            return
        }
        switch e.kind {
        case .identifier(let name):
            if scope.hasVariable(name) || name == "request" || name == "resource" { return }
            if Builtins.namespaces.contains(name) {
                warning("'\(name)' is a namespace of functions, not a value.", e.range)
            } else if scope.function(name) != nil {
                warning("'\(name)' is a function; call it with ().", e.range)
            } else {
                warning("Unknown variable '\(name)'; it is an error (deny) wherever it is evaluated.", e.range)
            }
        case .call(let callee, let args):
            for a in args { checkExpr(a, scope, in: function) }
            switch callee.kind {
            case .identifier(let name):
                if let (f, _) = scope.function(name) {
                    if f.parameters.count != args.count {
                        warning("Function '\(name)' takes \(f.parameters.count) argument\(f.parameters.count == 1 ? "" : "s") "
                                + "but \(args.count) \(args.count == 1 ? "is" : "are") given; the call is an error (deny).", e.range)
                    }
                    if let function { edges[ObjectIdentifier(function), default: []].append((f, e.range)) }
                } else if let n = Builtins.globals[name] {
                    if n != args.count {
                        warning("\(name)() takes \(n) argument\(n == 1 ? "" : "s") but \(args.count) \(args.count == 1 ? "is" : "are") given.", e.range)
                    }
                    if ["get", "exists", "getAfter", "existsAfter"].contains(name), service == .storage {
                        warning("\(name)() is not available in Storage rules; use firestore.\(name)().", e.range)
                    }
                    if Builtins.disputed.contains(name) {
                        warning("\(name)() is documented but Google's emulator reports it as not found; it may deny on Firebase.", e.range)
                    }
                } else {
                    warning("Unknown function '\(name)'; calling it is an error (deny).", e.range)
                }
            case .member(let base, let name):
                if case .identifier(let ns) = base.kind, Builtins.namespaces.contains(ns), !scope.hasVariable(ns) {
                    if let range = Builtins.namespaced[ns]?[name] {
                        if !range.contains(args.count) {
                            warning("\(ns).\(name)() takes \(range.lowerBound) argument\(range.lowerBound == 1 ? "" : "s") but \(args.count) \(args.count == 1 ? "is" : "are") given.", e.range)
                        }
                        if ns == "firestore", service == .firestore {
                            warning("firestore.\(name)() is for Storage rules; Firestore rules call \(name)() directly.", e.range)
                        }
                        if Builtins.disputed.contains("\(ns).\(name)") {
                            warning("\(ns).\(name)() is documented but Google's emulator reports it as not found; it may deny on Firebase.", e.range)
                        }
                    } else {
                        warning("Unknown function '\(ns).\(name)'; calling it is an error (deny).", e.range)
                    }
                } else {
                    checkExpr(base, scope, in: function)
                    // Constant patterns are compiled now, as Google's compiler does.
                    if ["matches", "split", "replace"].contains(name), let first = args.first,
                       case .string(let pattern) = first.kind {
                        do throws(RulesRegex.SyntaxError) {
                            _ = try RulesRegex.cached(pattern)
                        } catch {
                            self.error("Invalid regular expression: \(error.message).", first.range)
                        }
                    }
                }
            default:
                checkExpr(callee, scope, in: function)
            }
        default:
            for c in e.children { checkExpr(c, scope, in: function) }
        }
    }

    /// Recursion, direct or through a cycle, is an error (as in Firebase).
    mutating func checkRecursion() {
        var state: [ObjectIdentifier: Int] = [:]  // 1 visiting, 2 done
        var reported: Set<SourceRange> = []
        func visit(_ f: FunctionDeclaration, _ me: inout Checker) {
            let id = ObjectIdentifier(f)
            state[id] = 1
            for (callee, site) in me.edges[id] ?? [] {
                let cid = ObjectIdentifier(callee)
                if state[cid] == 1 {
                    if reported.insert(site).inserted {
                        me.error("Recursive call is not allowed ('\(f.name)' calls '\(callee.name)', which leads back to '\(f.name)').", site)
                    }
                } else if state[cid] == nil {
                    visit(callee, &me)
                }
            }
            state[id] = 2
        }
        for f in declarations.values.sorted(by: { $0.range.start < $1.range.start }) where state[ObjectIdentifier(f)] == nil {
            visit(f, &self)
        }
        if reported.isEmpty { checkCallDepth() }
    }

    /// Google's compiler rejects call chains deeper than 20 calls (21 functions), found
    /// statically (measured: `f1 -> … -> f21` loads, one more function does not).
    static let maxCallChain = 21

    mutating func checkCallDepth() {
        var longest: [ObjectIdentifier: [FunctionDeclaration]] = [:]
        func chain(_ f: FunctionDeclaration, _ me: Checker) -> [FunctionDeclaration] {
            let id = ObjectIdentifier(f)
            if let c = longest[id] { return c }
            var best: [FunctionDeclaration] = []
            for (callee, _) in me.edges[id] ?? [] {
                let c = chain(callee, me)
                if c.count > best.count { best = c }
                if best.count > Self.maxCallChain { break }
            }
            let result = [f] + best
            longest[id] = result
            return result
        }
        for f in declarations.values.sorted(by: { $0.range.start < $1.range.start }) {
            let c = chain(f, self)
            if c.count > Self.maxCallChain {
                let names = c.prefix(Self.maxCallChain).map(\.name).joined(separator: "->")
                error("Maximum allowed call depth of \(Self.maxCallChain - 1) is reached for [\(names)] call stack.",
                      c[Self.maxCallChain - 1].nameRange)
                return
            }
        }
    }
}
