/// One element of a request path for matching: a known segment, or — for queries — one
/// unknown document id, or any number of unknown segments (the parents a collection-group
/// query can reach).
enum PathElement: Equatable {
    case segment(String)
    case unknownId
    case anyPath
}

/// Finds the complete matches of a request path in the match tree: every block whose
/// pattern, joined with its ancestors', consumes the whole path, with its wildcard bindings.
struct Matcher {
    let elements: [PathElement]
    let version2: Bool
    var work = 0
    static let maxWork = 20_000
    var exhausted = false

    init(elements: [PathElement], version2: Bool) {
        self.elements = elements
        self.version2 = version2
    }

    mutating func collect(_ block: RulesBlock, from: Int, parent: Scope, into out: inout [(RulesBlock, Scope)]) {
        var ends: [(Int, [String], [Scope.Binding])] = []
        var names: [String] = []
        var values: [Scope.Binding] = []
        match(block.pattern, 0, from, &names, &values, &ends)
        for (end, names, bindings) in ends {
            work += 1
            if work > Self.maxWork {
                exhausted = true
                return
            }
            let scope = Scope(parent: parent, names: names, bindings: bindings, functions: block.functions)
            if end == elements.count { out.append((block, scope)) }
            for child in block.matches { collect(child, from: end, parent: scope, into: &out) }
        }
    }

    /// Matches `pattern[pi...]` against `elements[ei...]`, recording every end position
    /// with the wildcard bindings made on the way (`names`/`values` are a stack).
    mutating func match(_ pattern: [MatchSegment], _ pi: Int, _ ei: Int, _ names: inout [String],
                        _ values: inout [Scope.Binding], _ out: inout [(Int, [String], [Scope.Binding])]) {
        work += 1
        if work > Self.maxWork {
            exhausted = true
            return
        }
        if pi == pattern.count {
            out.append((ei, names, values))
            return
        }
        switch pattern[pi] {
        case .literal(let s):
            guard ei < elements.count, case .segment(let x) = elements[ei], x == s else { return }
            match(pattern, pi + 1, ei + 1, &names, &values, &out)
        case .single(let name):
            guard ei < elements.count else { return }
            let v: EvalValue
            switch elements[ei] {
            case .segment(let s): v = .value(.string(s))
            case .unknownId: v = .symbolic(.unknown("the document id '\(name)'"))
            case .anyPath: return
            }
            names.append(name)
            values.append(.value(v))
            match(pattern, pi + 1, ei + 1, &names, &values, &out)
            names.removeLast()
            values.removeLast()
        case .recursive(let name):
            let remaining = elements.count - ei
            let minimum = version2 ? 0 : 1
            guard remaining >= minimum else { return }
            for k in minimum...remaining {
                var segs: [String] = []
                var known = true
                for el in elements[ei..<(ei + k)] {
                    if case .segment(let s) = el { segs.append(s) } else { known = false }
                }
                let v: EvalValue = known ? .value(.path(RulesPath(segs))) : .symbolic(.unknown("the path '\(name)'"))
                names.append(name)
                values.append(.value(v))
                match(pattern, pi + 1, ei + k, &names, &values, &out)
                names.removeLast()
                values.removeLast()
            }
        }
    }
}
