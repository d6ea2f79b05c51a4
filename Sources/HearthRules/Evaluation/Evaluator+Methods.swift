import HearthCore

extension Evaluator {
    /// `receiver.name(args)` for every built-in type.
    func callMethod(_ receiver: RulesValue, _ name: String, _ args: [RulesValue], _ e: Expr) throws(EvalError) -> RulesValue {
        func want(_ n: Int) throws(EvalError) {
            guard args.count == n else {
                throw fail("\(receiver.typeName).\(name)() takes \(n) argument\(n == 1 ? "" : "s") but \(args.count) were given.", e)
            }
        }
        func bad() -> EvalError { badArgs("\(receiver.typeName).\(name)", args, e) }

        switch receiver {
        case .null:
            throw fail("Null value error: cannot call \(name)() on null.", e)

        case .string(let s):
            switch name {
            case "size": try want(0); return .int(Int64(s.utf16.count))
            case "lower": try want(0); return .string(Self.asciiCase(s, upper: false))
            case "upper": try want(0); return .string(Self.asciiCase(s, upper: true))
            case "trim":
                // Java's String.trim: strips code units <= U+0020 at both ends.
                try want(0)
                let u = Array(s.utf16)
                var i = 0, j = u.count
                while i < j, u[i] <= 32 { i += 1 }
                while j > i, u[j - 1] <= 32 { j -= 1 }
                return .string(String(decoding: u[i..<j], as: UTF16.self))
            case "toUtf8": try want(0); return .bytes(Array(s.utf8))
            case "matches":
                try want(1)
                guard case .string(let re) = args[0] else { throw bad() }
                return .bool(try regex(re, e, input: s).matchesWhole(s))
            case "split":
                try want(1)
                guard case .string(let re) = args[0] else { throw bad() }
                return .list(try regex(re, e, input: s).split(s).map { .string($0) })
            case "replace":
                try want(2)
                guard case .string(let re) = args[0], case .string(let sub) = args[1] else { throw bad() }
                return .string(try regex(re, e, input: s).replaceAll(s, with: sub))
            default: throw notFound(name, e)
            }

        case .bytes(let b):
            switch name {
            case "size": try want(0); return .int(Int64(b.count))
            case "toBase64": try want(0); return .string(Encoding.base64(b))
            case "toHexString": try want(0); return .string(Encoding.hex(b))
            default: throw notFound(name, e)
            }

        case .list(let l):
            switch name {
            case "size": try want(0); return .int(Int64(l.count))
            case "concat":
                try want(1)
                guard case .list(let o) = args[0] else { throw bad() }
                return .list(l + o)
            case "hasAll", "hasAny", "hasOnly":
                try want(1)
                guard case .list(let o) = args[0] else { throw bad() }
                return .bool(Self.setPredicate(name, Set(l), l, Set(o), o))
            case "join":
                try want(1)
                guard case .string(let sep) = args[0] else { throw bad() }
                var parts: [String] = []
                for x in l {
                    switch x {
                    case .string(let s): parts.append(s)
                    case .int(let i): parts.append(String(i))
                    case .float(let d): parts.append(RulesFormatting.javaDouble(d))
                    case .bool(let v): parts.append(v ? "true" : "false")
                    case .null: parts.append("null")
                    default: throw fail("join() cannot convert a \(x.typeName) to a string.", e)
                    }
                }
                return .string(parts.joined(separator: sep))
            case "removeAll":
                try want(1)
                guard case .list(let o) = args[0] else { throw bad() }
                let drop = Set(o)
                return .list(l.filter { !drop.contains($0) })
            case "toSet": try want(0); return .set(RulesSet(l))
            default: throw notFound(name, e)
            }

        case .set(let s):
            switch name {
            case "size": try want(0); return .int(Int64(s.count))
            case "hasAll", "hasAny", "hasOnly":
                try want(1)
                let other: [RulesValue]
                switch args[0] {
                case .list(let o): other = o
                case .set(let o): other = o.elements
                default: throw bad()
                }
                return .bool(Self.setPredicate(name, Set(s.elements), s.elements, Set(other), other))
            case "union", "intersection", "difference":
                try want(1)
                guard case .set(let o) = args[0] else { throw bad() }
                switch name {
                case "union": return .set(RulesSet(s.elements + o.elements))
                case "intersection": return .set(RulesSet(s.elements.filter { o.contains($0) }))
                default: return .set(RulesSet(s.elements.filter { !o.contains($0) }))
                }
            default: throw notFound(name, e)
            }

        case .map(let m):
            switch name {
            case "size": try want(0); return .int(Int64(m.count))
            case "keys": try want(0); return .list(m.keys.sorted(by: RulesOrdering.utf16Less).map { .string($0) })
            case "values":
                try want(0)
                return .list(m.keys.sorted(by: RulesOrdering.utf16Less).map { m[$0]! })
            case "get":
                try want(2)
                switch args[0] {
                case .string(let k): return m[k] ?? args[1]
                case .list(let keys):
                    var cur = receiver
                    for k in keys {
                        guard case .string(let ks) = k else { throw bad() }
                        guard case .map(let cm) = cur, let next = cm[ks] else { return args[1] }
                        cur = next
                    }
                    return cur
                default: throw bad()
                }
            case "diff":
                try want(1)
                guard case .map(let o) = args[0] else { throw bad() }
                return .mapDiff(RulesMapDiff(m, o))
            default: throw notFound(name, e)
            }

        case .mapDiff(let d):
            try want(0)
            switch name {
            case "addedKeys": return .set(RulesSet(d.added.map { .string($0) }))
            case "removedKeys": return .set(RulesSet(d.removed.map { .string($0) }))
            case "changedKeys": return .set(RulesSet(d.changed.map { .string($0) }))
            case "unchangedKeys": return .set(RulesSet(d.unchanged.map { .string($0) }))
            case "affectedKeys": return .set(RulesSet(d.affected.map { .string($0) }))
            default: throw notFound(name, e)
            }

        case .path(let p):
            switch name {
            case "bind":
                // Fills `{name}` and `{name=**}` segments of a path built with path('/a/{name}/c').
                try want(1)
                guard case .map(let m) = args[0] else { throw bad() }
                var out: [String] = []
                for seg in p.segments {
                    guard seg.hasPrefix("{"), seg.hasSuffix("}"), seg.count > 2 else {
                        out.append(seg)
                        continue
                    }
                    var key = String(seg.dropFirst().dropLast())
                    if key.hasSuffix("=**") { key.removeLast(3) }
                    guard let v = m[key] else { throw fail("bind(): no value for '\(key)'.", e) }
                    switch v {
                    case .string(let s): out.append(s)
                    case .path(let sub): out += sub.segments
                    case .int(let i): out.append(String(i))
                    default: throw fail("bind(): cannot use a \(v.typeName) as a path segment.", e)
                    }
                }
                return .path(RulesPath(out))
            default: throw notFound(name, e)
            }

        case .timestamp(let t):
            try want(0)
            let days = Calendar.floorDiv(t.seconds, 86_400)
            let secOfDay = t.seconds - days * 86_400
            switch name {
            case "year": return .int(Calendar.civil(days: days).year)
            case "month": return .int(Calendar.civil(days: days).month)
            case "day": return .int(Calendar.civil(days: days).day)
            case "hours": return .int(secOfDay / 3600)
            case "minutes": return .int(secOfDay / 60 % 60)
            case "seconds": return .int(secOfDay % 60)
            case "nanos": return .int(Int64(t.nanos))
            case "dayOfWeek":
                // 1970-01-01 was a Thursday (4); Monday = 1 … Sunday = 7.
                return .int((days % 7 + 7 + 3) % 7 + 1)
            case "dayOfYear":
                let y = Calendar.civil(days: days).year
                return .int(days - Calendar.days(year: y, month: 1, day: 1) + 1)
            case "date": return .timestamp(Timestamp(seconds: days * 86_400, nanos: 0))
            case "time": return .duration(RulesDuration(seconds: secOfDay, nanos: Int64(t.nanos))!)
            case "toMillis": return .int(t.seconds * 1000 + Int64(t.nanos / 1_000_000))
            default: throw notFound(name, e)
            }

        case .duration(let d):
            try want(0)
            switch name {
            case "seconds": return .int(d.seconds)
            case "nanos": return .int(Int64(d.nanos))
            default: throw notFound(name, e)
            }

        case .latlng(let lat, let lng):
            switch name {
            case "latitude": try want(0); return .float(lat)
            case "longitude": try want(0); return .float(lng)
            case "distance":
                try want(1)
                guard case .latlng(let lat2, let lng2) = args[0] else { throw bad() }
                return .float(Self.haversine(lat, lng, lat2, lng2))
            default: throw notFound(name, e)
            }

        case .bool, .int, .float:
            throw notFound(name, e)
        }
    }

    static func setPredicate(_ name: String, _ mine: Set<RulesValue>, _ mineList: [RulesValue],
                             _ other: Set<RulesValue>, _ otherList: [RulesValue]) -> Bool {
        switch name {
        case "hasAll": otherList.allSatisfy { mine.contains($0) }
        case "hasAny": otherList.contains { mine.contains($0) }
        default: mineList.allSatisfy { other.contains($0) }
        }
    }

    static func asciiCase(_ s: String, upper: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        for b in s.utf8 {
            if upper, b >= 97, b <= 122 { out.append(b - 32) } else if !upper, b >= 65, b <= 90 { out.append(b + 32) } else { out.append(b) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Great-circle distance in metres (haversine, mean Earth radius 6,371 km).
    static func haversine(_ lat1: Double, _ lng1: Double, _ lat2: Double, _ lng2: Double) -> Double {
        let r = 6_371_000.0
        let rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad, dLng = (lng2 - lng1) * rad
        let a = LibM.sin(dLat / 2) * LibM.sin(dLat / 2)
            + LibM.cos(lat1 * rad) * LibM.cos(lat2 * rad) * LibM.sin(dLng / 2) * LibM.sin(dLng / 2)
        return 2 * r * LibM.asin(min(1, a.squareRoot()))
    }

    /// The compiled pattern, after charging the match's work (input length × program size,
    /// per 10,000) to the step budget, so repeated matching over huge strings cannot run long.
    func regex(_ pattern: String, _ e: Expr, input: String) throws(EvalError) -> RulesRegex {
        let re: RulesRegex
        do throws(RulesRegex.SyntaxError) {
            re = try RulesRegex.cached(pattern)
        } catch {
            throw fail("Invalid regular expression '\(pattern)': \(error.message)", e)
        }
        steps += input.utf8.count * re.program.count / 10_000
        if steps > options.maxSteps {
            throw fatal("Exceeded the limit of \(options.maxSteps) evaluation steps for one request (regular expression work).", e)
        }
        return re
    }
}
