import HearthCore
@testable import HearthDocuments
import Testing

/// The Listen state machine without I/O: inputs in, outputs and actions out.
@Suite("Listen state machine")
struct ListenStateMachineTests {
    static let db = DatabaseName(project: "demo", database: "(default)")

    static func t(_ us: Int64) -> Timestamp { Timestamp(microseconds: us) }

    static func doc(_ p: String, _ fields: [String: Value] = [:], at us: Int64, created: Int64? = nil) -> Document {
        Document(path: path(p), fields: fields, createTime: t(created ?? us), updateTime: t(us))
    }

    static func change(_ before: Document?, _ after: Document?) -> DocumentChange {
        DocumentChange(path: (after ?? before)!.path, before: before, after: after, index: 0)
    }

    /// A machine at position 100 with one target whose read finished at `snapshot`.
    static func started(
        _ spec: ListenTargetSpec, docs: [Document], snapshot: Int64 = 100, id: Int32 = 7
    ) -> (ListenStateMachine, [ListenOutput]) {
        var m = ListenStateMachine(database: db)
        m.handle(.tick(t(100)))
        m.handle(.command(.add(ListenTarget(id: id, spec: spec))))
        _ = m.flush()
        m.handle(.loaded(ListenLoadResult(targetID: id, generation: 1, documents: docs, snapshot: t(snapshot), previous: nil)))
        let out = m.flush().outputs
        return (m, out)
    }

    static let cities = Query(collectionId: "cities", orderBy: [Query.Order(field("pop"))])

    @Test("Adding a target: ADD, register, read; then its documents, CURRENT and a global NO_CHANGE")
    func addTarget() {
        var m = ListenStateMachine(database: Self.db)
        m.handle(.tick(Self.t(100)))
        m.handle(.command(.add(ListenTarget(id: 7, spec: .query(Self.cities)))))
        let (out, actions) = m.flush()
        #expect(out == [.targetChange(.add, targetIDs: [7])])
        #expect(actions == [
            .register(7, .query(Self.cities)),
            .load(.init(targetID: 7, generation: 1, spec: .query(Self.cities), previousAt: nil)),
        ])
        let a = Self.doc("cities/a", ["pop": .integer(1)], at: 50)
        m.handle(.loaded(ListenLoadResult(targetID: 7, generation: 1, documents: [a], snapshot: Self.t(90), previous: nil)))
        let (out2, actions2) = m.flush()
        #expect(actions2.isEmpty)
        #expect(out2 == [
            .document(a, targetIDs: [7], removedTargetIDs: []),
            .targetChange(.current, targetIDs: [7], resumeToken: Self.t(100)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(100), readTime: Self.t(100)),
        ])
    }

    @Test("A read ahead of the stream's position waits for the feed before CURRENT")
    func readAhead() {
        var m = ListenStateMachine(database: Self.db)
        m.handle(.tick(Self.t(100)))
        m.handle(.command(.add(ListenTarget(id: 1, spec: .query(Self.cities)))))
        _ = m.flush()
        m.handle(.loaded(ListenLoadResult(targetID: 1, generation: 1, documents: [], snapshot: Self.t(150), previous: nil)))
        let (out, actions) = m.flush()
        #expect(actions == [.waitFor(Self.t(150))])
        #expect(!out.contains { if case .targetChange(.current, _, _, _, _) = $0 { true } else { false } })
        m.handle(.tick(Self.t(150)))
        #expect(m.flush().outputs == [
            .targetChange(.current, targetIDs: [1], resumeToken: Self.t(150)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(150), readTime: Self.t(150)),
        ])
    }

    @Test("Feed changes during a read: those the read saw are skipped, later ones applied")
    func bufferedDuringLoad() {
        var m = ListenStateMachine(database: Self.db)
        m.handle(.tick(Self.t(100)))
        m.handle(.command(.add(ListenTarget(id: 1, spec: .query(Self.cities)))))
        _ = m.flush()
        let a1 = Self.doc("cities/a", ["pop": .integer(1)], at: 110)
        let a2 = Self.doc("cities/a", ["pop": .integer(2)], at: 130, created: 110)
        m.handle(.changes(Self.t(110), [Self.change(nil, a1)]))
        m.handle(.changes(Self.t(130), [Self.change(a1, a2)]))
        // The read ran between the two commits.
        m.handle(.loaded(ListenLoadResult(targetID: 1, generation: 1, documents: [a1], snapshot: Self.t(120), previous: nil)))
        let out = m.flush().outputs
        #expect(out == [
            .document(a1, targetIDs: [1], removedTargetIDs: []),
            .document(a2, targetIDs: [1], removedTargetIDs: []),
            .targetChange(.current, targetIDs: [1], resumeToken: Self.t(130)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(130), readTime: Self.t(130)),
        ])
    }

    @Test("Documents entering, changing, leaving and deleted from a query target")
    func queryChanges() {
        let q = Query(collectionId: "cities", filter: .field(field("big"), .equal, .boolean(true)))
        let a = Self.doc("cities/a", ["big": .boolean(true)], at: 90)
        var (m, _) = Self.started(.query(q), docs: [a])
        let b = Self.doc("cities/b", ["big": .boolean(true)], at: 110)
        let small = Self.doc("cities/c", ["big": .boolean(false)], at: 111)
        m.handle(.changes(Self.t(111), [Self.change(nil, b), Self.change(nil, small)]))
        #expect(m.flush().outputs == [
            .document(b, targetIDs: [7], removedTargetIDs: []),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(111), readTime: Self.t(111)),
        ])
        let aSmall = Self.doc("cities/a", ["big": .boolean(false)], at: 120, created: 90)
        m.handle(.changes(Self.t(120), [Self.change(a, aSmall)]))
        m.handle(.changes(Self.t(121), [Self.change(b, nil)]))
        #expect(m.flush().outputs == [
            .document(aSmall, targetIDs: [], removedTargetIDs: [7]),
            .documentDelete(path("cities/b"), removedTargetIDs: [7], readTime: Self.t(121)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(121), readTime: Self.t(121)),
        ])
        // A change that concerns no target sends nothing, not even NO_CHANGE.
        m.handle(.changes(Self.t(130), [Self.change(nil, Self.doc("cities/z", ["big": .boolean(false)], at: 130))]))
        #expect(m.flush().outputs.isEmpty)
    }

    @Test("A limit query keeps exactly its window: entries evict the last, a departure from a full window re-reads")
    func limitWindow() {
        var q = Self.cities
        q.limit = 2
        let a = Self.doc("cities/a", ["pop": .integer(1)], at: 90)
        let b = Self.doc("cities/b", ["pop": .integer(5)], at: 90)
        var (m, _) = Self.started(.query(q), docs: [a, b])
        // c sorts before b: enters, b leaves the window.
        let c = Self.doc("cities/c", ["pop": .integer(3)], at: 110)
        m.handle(.changes(Self.t(110), [Self.change(nil, c)]))
        #expect(m.flush().outputs == [
            .document(c, targetIDs: [7], removedTargetIDs: []),
            .documentRemove(path("cities/b"), removedTargetIDs: [7], readTime: Self.t(110)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(110), readTime: Self.t(110)),
        ])
        // d sorts after the window: nothing.
        m.handle(.changes(Self.t(111), [Self.change(nil, Self.doc("cities/d", ["pop": .integer(9)], at: 111))]))
        #expect(m.flush().outputs.isEmpty)
        // a is deleted from a full window: the target is re-read, and no snapshot is sent
        // until the new window is known.
        m.handle(.changes(Self.t(112), [Self.change(a, nil)]))
        let (out, actions) = m.flush()
        #expect(out == [.documentDelete(path("cities/a"), removedTargetIDs: [7], readTime: Self.t(112))])
        #expect(actions == [.load(.init(targetID: 7, generation: 2, spec: .query(q), previousAt: nil))])
        m.handle(.loaded(ListenLoadResult(targetID: 7, generation: 2, documents: [c, b], snapshot: Self.t(112), previous: nil)))
        #expect(m.flush().outputs == [
            .document(b, targetIDs: [7], removedTargetIDs: []),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(112), readTime: Self.t(112)),
        ])
    }

    @Test("Document targets: changes, deletes, documents that do not exist yet")
    func documentTarget() {
        let a = Self.doc("users/a", ["n": .integer(1)], at: 90)
        var (m, first) = Self.started(.documents([path("users/a"), path("users/b")]), docs: [a])
        #expect(first.first == .document(a, targetIDs: [7], removedTargetIDs: []))
        let b = Self.doc("users/b", [:], at: 110)
        m.handle(.changes(Self.t(110), [Self.change(nil, b), Self.change(nil, Self.doc("users/c", [:], at: 110))]))
        m.handle(.changes(Self.t(111), [Self.change(a, nil)]))
        #expect(m.flush().outputs == [
            .document(b, targetIDs: [7], removedTargetIDs: []),
            .documentDelete(path("users/a"), removedTargetIDs: [7], readTime: Self.t(111)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(111), readTime: Self.t(111)),
        ])
    }

    @Test("Duplicate and unknown target ids end the stream; id 0 gets a server-chosen id")
    func targetIDs() {
        var m = ListenStateMachine(database: Self.db)
        m.handle(.command(.add(ListenTarget(id: 0, spec: .query(Self.cities)))))
        #expect(m.flush().outputs == [.targetChange(.add, targetIDs: [1])])
        m.handle(.command(.add(ListenTarget(id: 1, spec: .query(Self.cities)))))
        #expect(m.flush().actions == [.fail(ListenCause(.invalidArgument("Target ID 1 already exists.")))])
        var m2 = ListenStateMachine(database: Self.db)
        m2.handle(.command(.remove(9)))
        #expect(m2.flush().actions == [.fail(ListenCause(.invalidArgument("Target ID 9 was not found.")))])
    }

    @Test("Removing a target; a target the server refuses is removed with its cause")
    func removeAndRefuse() {
        var (m, _) = Self.started(.query(Self.cities), docs: [])
        m.handle(.command(.remove(7)))
        let (out, actions) = m.flush()
        #expect(out.first == .targetChange(.remove, targetIDs: [7]))
        #expect(actions == [.unregister(7)])
        m.handle(.command(.add(ListenTarget(id: 8, spec: .query(Self.cities)))))
        _ = m.flush()
        m.handle(.loadFailed(targetID: 8, generation: 1, error: HearthError(.permissionDenied, "Missing or insufficient permissions.")))
        let out2 = m.flush().outputs
        #expect(out2.first == .targetChange(
            .remove, targetIDs: [8], cause: ListenCause(HearthError(.permissionDenied, "Missing or insufficient permissions."))))
        // An invalid query is refused without ending the stream.
        var bad = Self.cities
        bad.startAt = Query.Cursor(values: [.integer(1), .integer(2), .integer(3)], before: true)
        m.handle(.command(.add(ListenTarget(id: 9, spec: .query(bad)))))
        let (out3, actions3) = m.flush()
        guard case .targetChange(.remove, let ids, let cause?, _, _)? = out3.first else {
            Issue.record("expected REMOVE with a cause, got \(out3)")
            return
        }
        #expect(ids == [9] && cause.code == .invalidArgument)
        #expect(actions3.isEmpty)
    }

    @Test("A once target is removed as soon as it is current")
    func once() {
        var m = ListenStateMachine(database: Self.db)
        m.handle(.tick(Self.t(100)))
        m.handle(.command(.add(ListenTarget(id: 3, spec: .query(Self.cities), once: true))))
        _ = m.flush()
        m.handle(.loaded(ListenLoadResult(targetID: 3, generation: 1, documents: [], snapshot: Self.t(100), previous: nil)))
        let (out, actions) = m.flush()
        #expect(out == [
            .targetChange(.current, targetIDs: [3], resumeToken: Self.t(100)),
            .targetChange(.remove, targetIDs: [3]),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(100), readTime: Self.t(100)),
        ])
        #expect(actions == [.unregister(3)])
    }

    @Test("Resuming: the exact delta when the old state is readable, else changes and an existence filter")
    func resume() {
        let a = Self.doc("cities/a", ["pop": .integer(1)], at: 50)
        let b = Self.doc("cities/b", ["pop": .integer(2)], at: 50)
        let b2 = Self.doc("cities/b", ["pop": .integer(3)], at: 80, created: 50)
        let c = Self.doc("cities/c", ["pop": .integer(4)], at: 70)
        for exact in [true, false] {
            var m = ListenStateMachine(database: Self.db)
            m.handle(.tick(Self.t(100)))
            m.handle(.command(.add(ListenTarget(id: 2, spec: .query(Self.cities), resumeAfter: Self.t(60), expectedCount: 2))))
            #expect(m.flush().actions.last == .load(.init(targetID: 2, generation: 1, spec: .query(Self.cities), previousAt: Self.t(60))))
            m.handle(.loaded(ListenLoadResult(
                targetID: 2, generation: 1, documents: [b2, c], snapshot: Self.t(100), previous: exact ? [a, b] : nil)))
            let out = m.flush().outputs
            if exact {
                #expect(Array(out.prefix(3)) == [
                    .document(b2, targetIDs: [2], removedTargetIDs: []),
                    .document(c, targetIDs: [2], removedTargetIDs: []),
                    .documentRemove(path("cities/a"), removedTargetIDs: [2], readTime: Self.t(100)),
                ])
            } else {
                #expect(Array(out.prefix(3)) == [
                    .document(b2, targetIDs: [2], removedTargetIDs: []),
                    .document(c, targetIDs: [2], removedTargetIDs: []),
                    .existenceFilter(targetID: 2, count: 2, names: [path("cities/b"), path("cities/c")]),
                ])
            }
        }
    }

    @Test("After an overflow every target is RESET and sent again; no snapshot while a current target re-reads")
    func overflow() {
        let a = Self.doc("cities/a", ["pop": .integer(1)], at: 90)
        var (m, _) = Self.started(.query(Self.cities), docs: [a])
        m.handle(.overflow)
        let (out, actions) = m.flush()
        #expect(out.isEmpty)
        #expect(actions == [.resumeFeed, .load(.init(targetID: 7, generation: 2, spec: .query(Self.cities), previousAt: nil))])
        let b = Self.doc("cities/b", ["pop": .integer(2)], at: 140)
        m.handle(.tick(Self.t(150)))
        #expect(m.flush().outputs.isEmpty)
        m.handle(.loaded(ListenLoadResult(targetID: 7, generation: 2, documents: [a, b], snapshot: Self.t(150), previous: nil)))
        #expect(m.flush().outputs == [
            .targetChange(.reset, targetIDs: [7]),
            .document(a, targetIDs: [7], removedTargetIDs: []),
            .document(b, targetIDs: [7], removedTargetIDs: []),
            .targetChange(.current, targetIDs: [7], resumeToken: Self.t(150)),
            .targetChange(.noChange, targetIDs: [], resumeToken: Self.t(150), readTime: Self.t(150)),
        ])
    }

    @Test("Resume tokens round-trip and malformed ones are refused")
    func resumeTokens() throws {
        let time = Timestamp(seconds: 1_700_000_000, nanos: 123_456_000)
        #expect(try ListenResumeToken.decode(ListenResumeToken.encode(time)) == time)
        #expect(throws: HearthError.self) { try ListenResumeToken.decode([1, 2, 3]) }
        #expect(throws: HearthError.self) { try ListenResumeToken.decode([9] + Array(repeating: 0, count: 8)) }
    }
}
