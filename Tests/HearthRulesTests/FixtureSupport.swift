import Foundation
import HearthCore
@testable import HearthRules

/// Reads the JSON fixtures in `Fixtures/` (through HearthCore's JSON, which keeps number
/// lexemes, so `1` is an int and `1.0` a float).
enum Fixtures {
    static var directory: URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!
    }

    /// Every fixture file whose name starts with `prefix`, parsed; a file that fails to
    /// parse is returned as an error so a test reports it.
    static func load(prefix: String) -> [(String, Result<JSON, HearthError>)] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted().map { name in
            let url = directory.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: url) else {
                return (name, .failure(HearthError(.notFound, "cannot read \(name)")))
            }
            do throws(HearthError) {
                return (name, .success(try JSON.parse(Array(data))))
            } catch {
                return (name, .failure(error))
            }
        }
    }

    /// Rules text given as a string or as an array of lines.
    static func text(_ j: JSON?) -> String? {
        if let s = j?.stringValue { return s }
        if let lines = j?.arrayValue { return lines.compactMap(\.stringValue).joined(separator: "\n") + "\n" }
        return nil
    }

    /// A typed value: numbers keep int/float by lexeme; `{"$timestamp": "…"}`,
    /// `{"$bytes": "hex"}`, `{"$latlng": [lat, lng]}`, `{"$ref": "/databases/…"}`,
    /// `{"$float": 1}` are tagged values.
    static func value(_ j: JSON) -> Value {
        switch j {
        case .null: return .null
        case .bool(let b): return .boolean(b)
        case .number(let n):
            if n.contains(".") || n.contains("e") || n.contains("E") { return .double(Double(n)!) }
            return .integer(Int64(n)!)
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(value))
        case .object(let members):
            if members.count == 1 {
                let (k, v) = members[0]
                switch k {
                case "$timestamp": return .timestamp(Timestamp(rfc3339: v.stringValue!)!)
                case "$bytes": return .bytes(hexBytes(v.stringValue!))
                case "$latlng":
                    let a = v.arrayValue!.map { Double(numberText($0))! }
                    return .geoPoint(latitude: a[0], longitude: a[1])
                case "$ref": return .reference("projects/demo-hearth" + v.stringValue!)
                case "$float": return .double(Double(numberText(v))!)
                default: break
                }
            }
            var m: [String: Value] = [:]
            for (k, v) in members { m[k] = value(v) }
            return .map(m)
        }
    }

    static func numberText(_ j: JSON) -> String { if case .number(let n) = j { return n }; return "nan" }

    static func fields(_ j: JSON?) -> [String: Value]? {
        guard let j, !j.isNull, case .map(let m) = value(j) else { return nil }
        return m
    }

    static func hexBytes(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.utf8.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(hexValue(a)! << 4 | hexValue(b)!) }
        return out
    }
}

extension JSON {
    var intValue: Int? { if case .number(let n) = self { return Int(n) }; return nil }
}
