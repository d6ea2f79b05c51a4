import HearthCore
import HearthDocuments
import Synchronization
import Testing

/// Plan → judge → apply: the authorizer (security rules) judges a commit before it reaches the
/// store, holding no database lock; what it read is checked again by the store.
@Suite("Commit judging")
struct CommitJudgingTests {
    /// Allows a write to `c/doc` only while `c/gate` has `open == true`, reading the gate through
    /// the peek (as a rule's `get()` does). The first time, it also runs `meanwhile` after its
    /// read: another writer changing the gate between the judgement and the store.
    final class GateAuthorizer: WriteAuthorizer {
        let calls = Mutex<[Bool?]>([])
        let meanwhile: @Sendable () async throws -> Void

        init(meanwhile: @escaping @Sendable () async throws -> Void = {}) { self.meanwhile = meanwhile }

        func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) async throws(HearthError) {
            let open: Bool?
            do {
                let gate = try await documents.document(database: database.database, path: path("c/gate"), afterWrites: false)
                if case .boolean(let b)? = gate?.fields["open"] { open = b } else { open = nil }
                let first = calls.withLock { calls in
                    calls.append(open)
                    return calls.count == 1
                }
                if first { try await meanwhile() }
            } catch let e as HearthError {
                throw e
            } catch {
                throw HearthError(.internal, "\(error)")
            }
            if open != true { throw HearthError(.permissionDenied, "closed") }
        }
    }

    @Test("A document the rules read that changes before the store applies the commit makes it judged again", arguments: Backend.allCases)
    func rulesReadChangedMeanwhile(_ backend: Backend) async throws {
        try await withHearth(backend) { db in
            try await db.set("c/gate", ["open": .boolean(true)])
            // The first judgement allows, then the gate closes: the store refuses the judged plan,
            // the commit is judged again against the closed gate and denied; nothing is written.
            let closing = GateAuthorizer { try await db.set("c/gate", ["open": .boolean(false)]) }
            await expectError(.permissionDenied) {
                _ = try await db.engine.commit(db.database, [.set(path("c/doc"), ["n": .integer(1)])], authorizer: closing)
            }
            #expect(closing.calls.withLock { $0 } == [true, false])
            #expect(try await db.get("c/doc") == nil)

            // A denial is final: it was right when the rules read the gate, even if the gate opens
            // before the store would have applied the commit.
            let opening = GateAuthorizer { try await db.set("c/gate", ["open": .boolean(true)]) }
            await expectError(.permissionDenied) {
                _ = try await db.engine.commit(db.database, [.set(path("c/doc"), ["n": .integer(2)])], authorizer: opening)
            }
            #expect(opening.calls.withLock { $0 } == [false])
            let open = GateAuthorizer()
            let result = try await db.engine.commit(db.database, [.set(path("c/doc"), ["n": .integer(3)])], authorizer: open)
            #expect(open.calls.withLock { $0 } == [true])
            #expect(try await db.get("c/doc")?.updateTime == result.commitTime)
        }
    }

    @Test("A batch write's writes are judged again too; each keeps its own outcome", arguments: Backend.allCases)
    func batchWriteJudgedAgain(_ backend: Backend) async throws {
        try await withHearth(backend) { db in
            try await db.set("c/gate", ["open": .boolean(true)])
            let closing = GateAuthorizer { try await db.set("c/gate", ["open": .boolean(false)]) }
            let (outcomes, _) = try await db.engine.batchWrite(
                db.database, [.set(path("c/a"), ["n": .integer(1)]), .set(path("c/b"), ["n": .integer(1)])], authorizer: closing)
            // a is allowed, the gate closes, b is denied; the store refuses the plan (the gate a was
            // judged on changed), and both are judged again against the closed gate.
            #expect(closing.calls.withLock { $0 } == [true, false, false, false])
            for outcome in outcomes {
                guard case .failure(let e) = outcome else {
                    Issue.record("expected a denial, got \(outcome)")
                    continue
                }
                #expect(e.code == .permissionDenied)
            }
            #expect(try await db.get("c/a") == nil)
        }
    }

    @Test("Transforms and the rules see the commit time the store records", arguments: Backend.allCases)
    func judgedCommitKeepsItsTime(_ backend: Backend) async throws {
        try await withHearth(backend) { db in
            try await db.set("c/gate", ["open": .boolean(true)])
            let judged = Mutex<Timestamp?>(nil)
            struct TimeAuthorizer: WriteAuthorizer {
                let seen: @Sendable (Timestamp) -> Void
                func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) async throws(HearthError) {
                    seen(time)
                }
            }
            let write = Write(
                path: path("c/t"), kind: .update(fields: [:], mask: nil),
                transforms: [FieldTransform(field: field("at"), operation: .serverTimestamp)])
            let result = try await db.engine.commit(db.database, [write], authorizer: TimeAuthorizer { t in judged.withLock { $0 = t } })
            #expect(judged.withLock { $0 } == result.commitTime)
            let t = result.commitTime
            // serverTimestamp() has millisecond precision.
            #expect(try await db.fields("c/t")?["at"] == .timestamp(Timestamp(seconds: t.seconds, nanos: t.nanos - t.nanos % 1_000_000)))
            #expect(try await db.get("c/t")?.updateTime == result.commitTime)
        }
    }
}
