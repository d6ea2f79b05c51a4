import HearthCore

/// Names and arities of the built-in functions, for the checker and the evaluator.
enum Builtins {
    static let namespaces: Set<String> = ["math", "timestamp", "duration", "latlng", "hashing", "firestore"]

    /// Global functions and their arity.
    static let globals: [String: Int] = [
        "get": 1, "exists": 1, "getAfter": 1, "existsAfter": 1, "path": 1, "int": 1, "float": 1, "string": 1,
        "bool": 1, "debug": 1,
    ]

    /// `namespace.function` and its arity range.
    static let namespaced: [String: [String: ClosedRange<Int>]] = [
        "math": ["abs": 1...1, "ceil": 1...1, "floor": 1...1, "round": 1...1, "sqrt": 1...1, "pow": 2...2,
                 "isInfinite": 1...1, "isNaN": 1...1],
        "timestamp": ["date": 3...3, "value": 1...1],
        "duration": ["value": 2...2, "time": 4...4, "abs": 1...1],
        "latlng": ["value": 2...2],
        "hashing": ["crc32": 1...1, "crc32c": 1...1, "md5": 1...1, "sha256": 1...1],
        "firestore": ["get": 1...1, "exists": 1...1],
    ]

    /// Documented but reported missing by Google's emulator (1.19.9) and by captures of the
    /// production Rules Test API; Hearth implements them and warns.
    static let disputed: Set<String> = ["bool", "math.isInfinite"]

    static func add(_ t: Timestamp, _ d: RulesDuration) -> Timestamp? {
        let (s1, o1) = t.seconds.addingReportingOverflow(d.seconds)
        if o1 { return nil }
        var s = s1
        var n = Int64(t.nanos) + Int64(d.nanos)
        if n >= 1_000_000_000 { n -= 1_000_000_000; s &+= 1 }
        if n < 0 { n += 1_000_000_000; s &-= 1 }
        let r = Timestamp(seconds: s, nanos: Int32(n))
        return Calendar.inRange(r) ? r : nil
    }
}

extension RulesDuration {
    var negated: RulesDuration? {
        guard seconds != .min else { return nil }
        return RulesDuration(seconds: -seconds, nanos: -Int64(nanos))
    }

    func adding(_ o: RulesDuration) -> RulesDuration? {
        let (s, ov) = seconds.addingReportingOverflow(o.seconds)
        if ov { return nil }
        return RulesDuration(seconds: s, nanos: Int64(nanos) + Int64(o.nanos))
    }

    func subtracting(_ o: RulesDuration) -> RulesDuration? {
        let (s, ov) = seconds.subtractingReportingOverflow(o.seconds)
        if ov { return nil }
        return RulesDuration(seconds: s, nanos: Int64(nanos) - Int64(o.nanos))
    }
}

extension Evaluator {
    func arity(_ name: String, _ args: [RulesValue], _ n: Int, _ e: Expr) throws(EvalError) {
        guard args.count == n else {
            throw fail("\(name)() takes \(n) argument\(n == 1 ? "" : "s") but \(args.count) were given.", e)
        }
    }

    func notFound(_ name: String, _ e: Expr) -> EvalError {
        fail("Function not found error: Name: [\(name)].", e)
    }

    func badArgs(_ name: String, _ args: [RulesValue], _ e: Expr) -> EvalError {
        fail("Invalid arguments for \(name)(\(args.map(\.typeName).joined(separator: ", "))).", e)
    }

    // MARK: Global functions

    func callGlobal(_ name: String, _ args: [RulesValue], _ e: Expr) throws(EvalError) -> RulesValue {
        switch name {
        case "get", "exists", "getAfter", "existsAfter":
            guard request.target.service == .firestore else { throw notFound(name, e) }
            try arity(name, args, 1, e)
            return try document(args[0], after: name.hasSuffix("After"), existsOnly: name.hasPrefix("exists"), e)
        case "path":
            try arity(name, args, 1, e)
            guard case .string(let s) = args[0] else { throw badArgs(name, args, e) }
            return .path(RulesPath(parsing: s))
        case "int":
            try arity(name, args, 1, e)
            switch args[0] {
            case .int: return args[0]
            case .float(let d):
                if d.isNaN { return .int(0) }
                if d >= 9.223372036854775807e18 { return .int(.max) }
                if d <= -9.223372036854775808e18 { return .int(.min) }
                return .int(Int64(d.rounded(.towardZero)))
            case .string(let s):
                guard let i = Int64(s) else { throw fail("Cannot convert '\(s)' to int.", e) }
                return .int(i)
            default: throw badArgs(name, args, e)
            }
        case "float":
            try arity(name, args, 1, e)
            switch args[0] {
            case .float: return args[0]
            case .int(let i): return .float(Double(i))
            case .string(let s):
                guard let d = Self.parseJavaDouble(s) else { throw fail("Cannot convert '\(s)' to float.", e) }
                return .float(d)
            default: throw badArgs(name, args, e)
            }
        case "string":
            try arity(name, args, 1, e)
            switch args[0] {
            case .string: return args[0]
            case .bool(let b): return .string(b ? "true" : "false")
            case .int(let i): return .string(String(i))
            case .float(let d): return .string(RulesFormatting.javaDouble(d))
            case .null: return .string("null")
            case .path(let p): return .string(p.description)
            default: throw badArgs(name, args, e)
            }
        case "bool":
            try arity(name, args, 1, e)
            switch args[0] {
            case .bool: return args[0]
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            default: throw badArgs(name, args, e)
            }
        default:
            throw notFound(name, e)
        }
    }

    /// Java's `Double.parseDouble` accepts surrounding whitespace, `NaN`, `Infinity`, and a
    /// trailing `d`/`f`; Swift's parser handles the rest of the syntax.
    static func parseJavaDouble(_ s: String) -> Double? {
        var t = Substring(s)
        while let f = t.first, f.asciiValue.map({ $0 <= 32 }) ?? false { t.removeFirst() }
        while let l = t.last, l.asciiValue.map({ $0 <= 32 }) ?? false { t.removeLast() }
        if let l = t.last, "dDfF".contains(l) { t.removeLast() }
        switch t {
        case "NaN", "+NaN", "-NaN": return .nan
        case "Infinity", "+Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: break
        }
        guard !t.isEmpty, t.allSatisfy({ "0123456789.eE+-".contains($0) }) else { return nil }
        return Double(t)
    }

    // MARK: Namespaces

    func callNamespace(_ ns: String, _ name: String, _ args: [RulesValue], _ e: Expr) throws(EvalError) -> RulesValue {
        guard let range = Builtins.namespaced[ns]?[name] else { throw notFound("\(ns).\(name)", e) }
        guard range.contains(args.count) else {
            throw fail("\(ns).\(name)() takes \(range.lowerBound) argument\(range.lowerBound == 1 ? "" : "s") but \(args.count) were given.", e)
        }
        let full = "\(ns).\(name)"
        switch (ns, name) {
        case ("math", _): return try math(name, args[0], args.count > 1 ? args[1] : nil, e)
        case ("timestamp", "date"):
            guard case .int(let y) = args[0], case .int(let m) = args[1], case .int(let d) = args[2] else {
                throw badArgs(full, args, e)
            }
            guard y >= 1, y <= 9999, m >= 1, m <= 12, d >= 1, d <= Calendar.daysIn(month: m, year: y) else {
                throw fail("Invalid date \(y)-\(m)-\(d).", e)
            }
            return .timestamp(Timestamp(seconds: Calendar.days(year: y, month: m, day: d) * 86_400, nanos: 0))
        case ("timestamp", "value"):
            guard case .int(let ms) = args[0] else { throw badArgs(full, args, e) }
            let s = Calendar.floorDiv(ms, 1000)
            let t = Timestamp(seconds: s, nanos: Int32((ms - s * 1000) * 1_000_000))
            guard Calendar.inRange(t) else { throw fail("Timestamp \(ms) ms is out of range.", e) }
            return .timestamp(t)
        case ("duration", "value"):
            guard case .int(let n) = args[0], case .string(let unit) = args[1] else { throw badArgs(full, args, e) }
            let perUnit: (seconds: Int64, nanos: Int64)
            switch unit {
            case "w": perUnit = (604_800, 0)
            case "d": perUnit = (86_400, 0)
            case "h": perUnit = (3_600, 0)
            case "m": perUnit = (60, 0)
            case "s": perUnit = (1, 0)
            case "ms": perUnit = (0, 1_000_000)
            case "ns": perUnit = (0, 1)
            default: throw fail("Invalid duration unit '\(unit)'; expected w, d, h, m, s, ms or ns.", e)
            }
            if perUnit.seconds > 0 {
                let (s, o) = n.multipliedReportingOverflow(by: perUnit.seconds)
                guard !o, let d = RulesDuration(seconds: s, nanos: 0) else { throw fail("Duration overflow.", e) }
                return .duration(d)
            }
            let (q, r) = n.quotientAndRemainder(dividingBy: 1_000_000_000 / perUnit.nanos)
            guard let d = RulesDuration(seconds: q, nanos: r * perUnit.nanos) else { throw fail("Duration overflow.", e) }
            return .duration(d)
        case ("duration", "time"):
            var parts: [Int64] = []
            for a in args {
                guard case .int(let i) = a else { throw badArgs(full, args, e) }
                parts.append(i)
            }
            let (h, o1) = parts[0].multipliedReportingOverflow(by: 3600)
            let (m, o2) = parts[1].multipliedReportingOverflow(by: 60)
            let (hm, o3) = h.addingReportingOverflow(m)
            let (s, o4) = hm.addingReportingOverflow(parts[2])
            guard !(o1 || o2 || o3 || o4), let d = RulesDuration(seconds: s, nanos: parts[3]) else {
                throw fail("Duration overflow.", e)
            }
            return .duration(d)
        case ("duration", "abs"):
            guard case .duration(let d) = args[0] else { throw badArgs(full, args, e) }
            if d.seconds < 0 || d.nanos < 0 {
                guard let n = d.negated else { throw fail("Duration overflow.", e) }
                return .duration(n)
            }
            return args[0]
        case ("latlng", "value"):
            guard let lat = Self.number(args[0]), let lng = Self.number(args[1]) else { throw badArgs(full, args, e) }
            guard lat >= -90, lat <= 90, lng >= -180, lng <= 180 else {
                throw fail("Latitude must be within [-90, 90] and longitude within [-180, 180].", e)
            }
            return .latlng(latitude: lat, longitude: lng)
        case ("hashing", _):
            let data: [UInt8]
            switch args[0] {
            case .string(let s): data = Array(s.utf8)
            case .bytes(let b): data = b
            default: throw badArgs(full, args, e)
            }
            switch name {
            case "crc32": return .bytes(Hashing.crc32(data))
            case "crc32c": return .bytes(Hashing.crc32c(data))
            case "md5": return .bytes(Hashing.md5(data))
            default: return .bytes(Hashing.sha256(data))
            }
        case ("firestore", _):
            guard request.target.service == .storage else { throw notFound(full, e) }
            return try document(args[0], after: false, existsOnly: name == "exists", e)
        default:
            throw notFound(full, e)
        }
    }

    static func number(_ v: RulesValue) -> Double? {
        switch v {
        case .int(let i): Double(i)
        case .float(let d): d
        default: nil
        }
    }

    func math(_ name: String, _ a: RulesValue, _ b: RulesValue?, _ e: Expr) throws(EvalError) -> RulesValue {
        let full = "math.\(name)"
        if name == "abs" {
            switch a {
            case .int(let i):
                return .int(i == .min ? .min : Swift.abs(i))  // Java's Math.abs(Long.MIN_VALUE)
            case .float(let d): return .float(Swift.abs(d))
            default: throw badArgs(full, [a], e)
            }
        }
        guard let x = Self.number(a) else { throw badArgs(full, [a] + (b.map { [$0] } ?? []), e) }
        switch name {
        case "ceil": return .float(x.rounded(.up))
        case "floor": return .float(x.rounded(.down))
        case "round":
            // Java's Math.round: floor(x + 0.5), NaN → 0, saturating.
            if case .int = a { return a }
            if x.isNaN { return .int(0) }
            let r = (x + 0.5).rounded(.down)
            if r >= 9.223372036854775807e18 { return .int(.max) }
            if r <= -9.223372036854775808e18 { return .int(.min) }
            return .int(Int64(r))
        case "sqrt": return .float(x.squareRoot())
        case "pow":
            guard let b, let y = Self.number(b) else { throw badArgs(full, [a] + (b.map { [$0] } ?? []), e) }
            return .float(LibM.pow(x, y))
        case "isInfinite": return .bool(x.isInfinite)
        case "isNaN": return .bool(x.isNaN)
        default: throw notFound(full, e)
        }
    }
}
