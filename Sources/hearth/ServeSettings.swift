import ArgumentParser
import Foundation
import HearthCore

/// Where a setting of `hearth serve` came from (`hearth serve --print-config`).
enum SettingSource: Equatable, CustomStringConvertible {
    /// A command-line flag, `--firestore-port`.
    case flag(String)
    /// An environment variable, `HEARTH_DATA_DIR`.
    case environment(String)
    /// A key of `firebase.json` (or `.firebaserc`), `emulators.firestore.port`.
    case file(String, key: String)
    /// A file in the data directory that the first start writes (the admin token).
    case firstRunFile(String)
    /// Hearth's default.
    case byDefault
    /// Follows from other settings (`mail-from` from `project`).
    case derived(String)

    var description: String {
        switch self {
        case .flag(let name): "flag \(name)"
        case .environment(let name): "env \(name)"
        case .file(let file, let key): "\(file) \(key)"
        case .firstRunFile(let path): "first-run file \(path)"
        case .byDefault: "default"
        case .derived(let from): "derived from \(from)"
        }
    }

    /// The kind alone, for `--print-config-format json`: flag, env, firebase.json, .firebaserc, first-run, default, derived.
    var kind: String {
        switch self {
        case .flag: "flag"
        case .environment: "env"
        case .file(let file, _): file
        case .firstRunFile: "first-run"
        case .byDefault: "default"
        case .derived: "derived"
        }
    }
}

/// One setting in force: its name (the flag's, without `--`), its value (nil: not set) and
/// where it came from. A secret's value is never kept: only that one is set.
struct ResolvedSetting {
    let name: String
    let value: JSON
    let source: SettingSource
    let secret: Bool
}

/// The one resolution path of `hearth serve`'s settings (flags, then the environment, then
/// `firebase.json`/`.firebaserc`, then defaults). ``Serve`` asks it for each value as it builds
/// its ``ServerConfiguration``, and it records the value and its source as it answers —
/// what `--print-config` shows is what the server uses, with no second parser.
struct SettingsLedger {
    let environment: [String: String]
    private(set) var settings: [ResolvedSetting] = []

    init(environment: [String: String]) { self.environment = environment }

    /// Records a setting decided elsewhere (a switch, a first-run file, a derived value).
    mutating func record(_ name: String, _ value: JSON, _ source: SettingSource, secret: Bool = false) {
        settings.append(ResolvedSetting(name: name, value: secret && !value.isNull ? .string("(set, redacted)") : value, source: source, secret: secret))
    }

    /// The order every setting is decided in: the flag, else the environment variable (`parse`
    /// refuses a value it cannot read: never silently ignored), else the file's key, else the default.
    private func pick<T>(
        _ name: String, flag: T?, env: String?, parse: (String) throws -> T,
        file: (source: SettingSource, value: T?)?, default fallback: T?
    ) rethrows -> (T, SettingSource)? {
        if let flag { return (flag, .flag("--\(name)")) }
        if let env, let text = environment[env] { return (try parse(text), .environment(env)) }
        if let file, let value = file.value { return (value, file.source) }
        return fallback.map { ($0, .byDefault) }
    }

    /// A text setting: the flag, else the environment variable, else the file's key, else the default.
    mutating func string(
        _ name: String, flag: String?, env: String? = nil, file: (source: SettingSource, value: String?)? = nil, default fallback: String? = nil,
        secret: Bool = false, shown: ((String) -> String)? = nil
    ) -> String? {
        let found = pick(name, flag: flag, env: env, parse: { $0 }, file: file, default: fallback)
        record(name, found.map { JSON.string(shown?($0.0) ?? $0.0) } ?? .null, found?.1 ?? .byDefault, secret: secret)
        return found?.0
    }

    /// Takes back the setting recorded last (to record it again with what it stands for).
    mutating func popLast() -> ResolvedSetting? { settings.popLast() }

    /// The source of the setting recorded last.
    var lastSource: SettingSource { settings.last?.source ?? .byDefault }

    /// A whole number: as ``string(_:flag:env:file:default:secret:shown:)``; an environment value that
    /// is not a number in `range` is refused (never silently ignored).
    mutating func integer(
        _ name: String, flag: Int?, env: String? = nil, file: (source: SettingSource, value: Int?)? = nil, default fallback: Int? = nil,
        range: ClosedRange<Int>
    ) throws -> Int? {
        let found = try pick(name, flag: flag, env: env, parse: { text in
            guard let n = Int(text.trimmingCharacters(in: .whitespaces)) else { throw ValidationError("\(env ?? name)=\(text) is not a whole number.") }
            return n
        }, file: file, default: fallback)
        if let (n, source) = found, !range.contains(n) {
            throw ValidationError("\(name) (\(source)) must be between \(range.lowerBound) and \(range.upperBound); it is \(n).")
        }
        record(name, found.map { JSON.number($0.0) } ?? .null, found?.1 ?? .byDefault)
        return found?.0
    }

    /// A number of seconds (or any decimal): as ``integer(_:flag:env:file:default:range:)``.
    mutating func decimal(_ name: String, flag: Double?, env: String, default fallback: Double, range: ClosedRange<Double>) throws -> Double {
        let found = try pick(name, flag: flag, env: env, parse: { text in
            guard let n = Double(text.trimmingCharacters(in: .whitespaces)) else { throw ValidationError("\(env)=\(text) is not a number.") }
            return n
        }, file: nil, default: fallback) ?? (fallback, .byDefault)
        guard found.0.isFinite, range.contains(found.0) else {
            throw ValidationError("--\(name) must be between \(range.lowerBound) and \(range.upperBound).")
        }
        record(name, .number(String(found.0)), found.1)
        return found.0
    }

    /// A list (`--trusted-proxy` repeated, or a comma-separated variable, or a JSON array).
    mutating func list(_ name: String, flag: [String], flagName: String, env: String, file: (source: SettingSource, value: [String])) -> [String] {
        let found: ([String], SettingSource)
        if !flag.isEmpty {
            found = (flag, .flag("--\(flagName)"))
        } else if let text = environment[env] {
            found = (text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }, .environment(env))
        } else if !file.value.isEmpty {
            found = (file.value, file.source)
        } else {
            found = ([], .byDefault)
        }
        record(name, .array(found.0.map { .string($0) }), found.1)
        return found.0
    }

    // MARK: Printing

    /// `name  value  source`, one setting per line, in resolution order.
    func text() -> String {
        let rows = settings.map { s -> (String, String, String) in
            (s.name, Self.show(s.value), s.source.description)
        }
        let nameWidth = rows.map(\.0.count).max() ?? 0
        let valueWidth = min(rows.map(\.1.count).max() ?? 0, 48)
        return rows.map { name, value, source in
            let paddedName = name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            let paddedValue = value.count >= valueWidth ? value : value.padding(toLength: valueWidth, withPad: " ", startingAt: 0)
            return "\(paddedName)  \(paddedValue)  \(source)"
        }.joined(separator: "\n")
    }

    /// `{"settings": {"name": {"value": …, "source": "flag --x", "from": "flag", "secret": true?}}}`.
    func json() -> JSON {
        .object([
            (
                "settings",
                .object(settings.map { s -> (String, JSON) in
                    var fields: [(String, JSON)] = [("value", s.value), ("source", .string(s.source.description)), ("from", .string(s.source.kind))]
                    if s.secret { fields.append(("secret", .bool(true))) }
                    return (s.name, JSON.object(fields))
                })
            )
        ])
    }

    static func show(_ value: JSON) -> String {
        switch value {
        case .null: "(not set)"
        case .string(let s): s
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        case .array(let items): items.isEmpty ? "(none)" : items.map(show).joined(separator: ", ")
        default: value.serialized()
        }
    }
}
