import Foundation
import HearthCore
import HearthDocuments
import HearthSQLite
import Testing

/// Every backend the engine runs on. Each conformance scenario is parameterised over all of
/// them (GRDB runs its scenarios against `DatabaseQueue` and `DatabasePool` the same way).
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqliteInMemory
    case sqliteFile

    var testDescription: String {
        switch self {
        case .sqliteInMemory: "SQLite in memory"
        case .sqliteFile: "SQLite file"
        }
    }
}

/// A temporary directory removed when the scope ends.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    return try await body(dir)
}

/// Runs a scenario against a fresh engine on the given backend.
func withHearth(
    _ backend: Backend, strictIndexes: Bool = false, configure: (inout DocumentEngine.Configuration) -> Void = { _ in },
    _ body: (Hearth) async throws -> Void
) async throws {
    var configuration = DocumentEngine.Configuration(strictIndexes: strictIndexes)
    configure(&configuration)
    switch backend {
    case .sqliteInMemory:
        let engine = try await DocumentEngine(store: try SQLiteDocumentStore.inMemory(), configuration: configuration)
        try await body(Hearth(engine: engine))
    case .sqliteFile:
        try await withTemporaryDirectory { dir in
            let store = try SQLiteDocumentStore(path: dir.appendingPathComponent("hearth.sqlite").path)
            let engine = try await DocumentEngine(store: store, configuration: configuration)
            try await body(Hearth(engine: engine))
        }
    }
}

func path(_ text: String) -> ResourcePath { ResourcePath(parsing: text) }
func field(_ text: String) -> FieldPath { try! FieldPath(parsing: text) }

/// The engine with helpers that read like the domain: `try await db.set("users/alice", ["age": .integer(30)])`.
struct Hearth: Sendable {
    let engine: DocumentEngine
    let database = DatabaseName(project: "demo", database: "(default)")

    func ref(_ p: String) -> Value { .reference(database.name(of: path(p))) }

    @discardableResult
    func commit(_ writes: [Write], transaction: TransactionID? = nil) async throws -> CommitResult {
        try await engine.commit(database, writes, transaction: transaction)
    }

    @discardableResult
    func write(_ write: Write) async throws -> WriteResult {
        try await commit([write]).writeResults[0]
    }

    @discardableResult
    func set(_ p: String, _ fields: [String: Value]) async throws -> CommitResult {
        try await commit([.set(path(p), fields)])
    }

    @discardableResult
    func create(_ p: String, _ fields: [String: Value]) async throws -> CommitResult {
        try await commit([.create(path(p), fields)])
    }

    @discardableResult
    func update(_ p: String, _ fields: [String: Value], mask: [String]) async throws -> CommitResult {
        try await commit([.update(path(p), fields, mask: mask.map(field))])
    }

    @discardableResult
    func transform(_ p: String, _ transforms: [(String, FieldTransform.Operation)]) async throws -> WriteResult {
        try await write(Write(path: path(p), kind: .transform, transforms: transforms.map { FieldTransform(field: field($0.0), operation: $0.1) }))
    }

    func get(_ p: String, consistency: ReadConsistency = .latest) async throws -> Document? {
        try await engine.get(database, path(p), consistency: consistency).0
    }

    func fields(_ p: String) async throws -> [String: Value]? { try await get(p)?.fields }

    func value(_ p: String, _ f: String) async throws -> Value? {
        try await get(p).flatMap { Value.map($0.fields).value(at: field(f)) }
    }

    func query(_ q: Query, consistency: ReadConsistency = .latest) async throws -> [Document] {
        try await engine.runQuery(database, q, consistency: consistency).documents
    }

    /// Result paths of a query, as text.
    func names(_ q: Query, consistency: ReadConsistency = .latest) async throws -> [String] {
        try await query(q, consistency: consistency).map(\.path.text)
    }
}

/// Expects the body to fail with a HearthError of the given code.
func expectError(
    _ code: ErrorCode, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(code.statusName), but it succeeded. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    } catch let e as HearthError {
        if e.code != code {
            Issue.record("expected \(code.statusName), got \(e)", sourceLocation: sourceLocation)
        }
    } catch {
        Issue.record("expected \(code.statusName), got a non-Hearth error \(error)", sourceLocation: sourceLocation)
    }
}

/// Bit-exact value comparison (1 vs 1.0, -0.0, NaN and the UTF-8 bytes of strings all matter).
func expectIdentical(_ actual: Value?, _ expected: Value, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let actual else {
        Issue.record("expected \(expected), field is missing", sourceLocation: sourceLocation)
        return
    }
    if !bitIdentical(actual, expected) {
        Issue.record("expected \(expected), got \(actual)", sourceLocation: sourceLocation)
    }
}

func bitIdentical(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
    case (.reference(let x), .reference(let y)): return Array(x.utf8) == Array(y.utf8)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { bitIdentical($0, $1) }
    case (.map(let x), .map(let y)):
        guard x.count == y.count else { return false }
        for (k, v) in x {
            guard let w = y[k], bitIdentical(v, w) else { return false }
        }
        return Set(x.keys.map { Array($0.utf8) }) == Set(y.keys.map { Array($0.utf8) })
    default: return a.identical(to: b)
    }
}

/// SplitMix64: reproducible randomness from a seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func pick<T>(_ options: [T]) -> T { options[Int.random(in: 0..<options.count, using: &self)] }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}

extension Timestamp {
    func adding(micros: Int64) -> Timestamp { Timestamp(microseconds: microseconds + micros) }
}
