@testable import HearthDocuments
import Testing

/// The lock table's rules, event by event, with no waiting and no clock: documents are strings.
@Suite("Document locks (state machine)")
struct DocumentLocksStateMachineTests {
    typealias Machine = DocumentLocks.StateMachine<String>

    /// A machine with named transactions and helpers that read like the rules.
    struct Table {
        var machine = Machine(limits: .init(waitLimit: .seconds(20), holdLimit: .seconds(10), retryRetention: .seconds(300)))
        var now: Duration = .zero

        mutating func begin(retrying: LockOwnerID? = nil) -> LockOwnerID {
            let (owner, actions) = machine.begin(transactional: true, retrying: retrying, now: now)
            #expect(actions.isEmpty)
            return owner
        }

        mutating func writer() -> LockOwnerID { machine.begin(transactional: false, now: now).0 }

        mutating func read(_ owner: LockOwnerID, _ keys: String...) -> (Machine.Acquisition, [Machine.Action]) {
            machine.acquire(owner, Dictionary(keys.map { ($0, .shared) }, uniquingKeysWith: { a, _ in a }), now: now)
        }

        mutating func commit(_ owner: LockOwnerID, _ keys: String...) -> (Machine.Acquisition, [Machine.Action]) {
            machine.acquire(owner, Dictionary(keys.map { ($0, .exclusive) }, uniquingKeysWith: { a, _ in a }), commits: true, now: now)
        }

        mutating func end(_ owner: LockOwnerID, committed: Bool = true) -> [Machine.Action] {
            machine.end(owner, committed: committed, now: now)
        }
    }

    static func requestID(_ acquisition: Machine.Acquisition) -> LockRequestID? {
        if case .waiting(let id) = acquisition { return id }
        return nil
    }

    @Test("Shared locks are compatible; exclusive ones exclude everyone else")
    func compatibility() {
        var t = Table()
        let (a, b, c) = (t.begin(), t.begin(), t.begin())
        #expect(t.read(a, "d").0 == .granted)
        #expect(t.read(b, "d").0 == .granted)
        #expect(t.machine.holders("d") == [a: .shared, b: .shared])
        // c is the youngest: it waits for the two older readers.
        let (waiting, actions) = t.commit(c, "d")
        let id = try! #require(Self.requestID(waiting))
        #expect(actions.isEmpty)
        #expect(t.end(a) == [])
        #expect(t.end(b) == [.grant(id)])
        #expect(t.machine.holders("d") == [c: .exclusive])
        // While c holds it exclusively, a younger reader waits.
        let d = t.begin()
        #expect(Self.requestID(t.read(d, "d").0) != nil)
        #expect(t.machine.mode(d, "d") == nil)
    }

    @Test("Waiters are served first come, first served by the time their transaction began")
    func fifo() throws {
        var t = Table()
        let holder = t.writer()
        #expect(t.commit(holder, "d").0 == .granted)
        let (first, second, third) = (t.begin(), t.begin(), t.begin())
        // They ask out of order; they are queued in begin order.
        let r3 = try #require(Self.requestID(t.read(third, "d").0))
        let r1 = try #require(Self.requestID(t.commit(first, "d").0))
        let r2 = try #require(Self.requestID(t.read(second, "d").0))
        #expect(t.machine.queue("d") == [r1, r2, r3])
        // The exclusive request of the oldest goes alone; then the two readers together.
        #expect(t.end(holder) == [.grant(r1)])
        #expect(t.end(first) == [.grant(r2), .grant(r3)])
        #expect(t.machine.holders("d") == [second: .shared, third: .shared])
        // A reader that comes later does not overtake a waiting writer that began before it.
        let writer = t.writer()
        let rw = try #require(Self.requestID(t.commit(writer, "d").0))
        let late = t.begin()
        let rl = try #require(Self.requestID(t.read(late, "d").0))
        #expect(t.end(second) == [])
        #expect(t.end(third) == [.grant(rw)])
        #expect(t.end(writer) == [.grant(rl)])
    }

    @Test("A sole reader upgrades at once; of several readers that all upgrade, the oldest commits")
    func upgrade() throws {
        var t = Table()
        let a = t.begin()
        #expect(t.read(a, "d").0 == .granted)
        #expect(t.commit(a, "d").0 == .granted)
        #expect(t.machine.mode(a, "d") == .exclusive)
        _ = t.end(a)
        // Three readers share d; each then asks to write it (the contended increment, on shared locks).
        let (b, c, d) = (t.begin(), t.begin(), t.begin())
        for owner in [b, c, d] { #expect(t.read(owner, "d").0 == .granted) }
        let rb = try #require(Self.requestID(t.commit(b, "d").0))  // waits for c and d: no cycle yet
        // c's upgrade closes a cycle with b: c, the younger, is aborted (its own request fails).
        let (second, none) = t.commit(c, "d")
        #expect(second == .aborted(.contention) && none.isEmpty)
        #expect(t.machine.abortReason(b) == nil)
        // d's upgrade closes a cycle with b too: d is aborted and b gets the lock.
        let (last, actions) = t.commit(d, "d")
        #expect(last == .aborted(.contention))
        #expect(actions == [.grant(rb)])
        #expect(t.machine.abortReason(d) == .contention)
        #expect(t.machine.holders("d") == [b: .exclusive])
    }

    @Test("Two readers that both upgrade deadlock; wound-wait aborts exactly the younger")
    func upgradeDeadlock() throws {
        var t = Table()
        let (old, young) = (t.begin(), t.begin())
        #expect(t.read(old, "d").0 == .granted)
        #expect(t.read(young, "d").0 == .granted)
        // The younger asks first and waits for the older's shared lock...
        let ry = try #require(Self.requestID(t.commit(young, "d").0))
        // ...then the older asks: it wounds the younger and gets the lock at once.
        let (result, actions) = t.commit(old, "d")
        #expect(result == .granted)
        #expect(actions == [.fail(ry, .contention)])
        #expect(t.machine.abortReason(young) == .contention)
        #expect(t.machine.abortReason(old) == nil)
        #expect(t.machine.holders("d") == [old: .exclusive])
        // The aborted transaction learns it on its next request.
        #expect(t.read(young, "e").0 == .aborted(.contention))
    }

    @Test("Cross-document deadlock: the older transaction commits, the younger is ABORTED")
    func crossDeadlock() throws {
        var t = Table()
        let (t1, t2) = (t.begin(), t.begin())
        #expect(t.read(t1, "a").0 == .granted)
        #expect(t.read(t2, "b").0 == .granted)
        let r2 = try #require(Self.requestID(t.commit(t2, "a", "b").0))  // waits for t1's share of a
        let (result, actions) = t.commit(t1, "a", "b")  // t2 holds b: t2 is younger, so it is wounded
        #expect(result == .granted)
        #expect(actions == [.fail(r2, .contention)])
        #expect(t.machine.holders("a") == [t1: .exclusive] && t.machine.holders("b") == [t1: .exclusive])
    }

    @Test("Blocked requests wait, older or younger; a committing holder is never aborted")
    func waitingIsNotAborting() throws {
        var t = Table()
        let (old, young) = (t.begin(), t.begin())
        #expect(t.commit(young, "d").0 == .granted)  // committing: it holds everything it needs
        let r = try #require(Self.requestID(t.read(old, "d").0))
        #expect(t.machine.abortReason(young) == nil)
        #expect(t.end(young) == [.grant(r)])
        // A younger writer of a document the older holds waits too.
        let younger = t.begin()
        let ry = try #require(Self.requestID(t.commit(younger, "d").0))
        #expect(t.machine.abortReason(old) == nil)
        #expect(t.end(old) == [.grant(ry)])
        // And an older reader waits for a younger holder that is not committing: no preemption.
        let (older, holder) = (t.begin(), t.begin())
        _ = t.end(younger)
        #expect(t.read(holder, "e").0 == .granted)
        let ro = try #require(Self.requestID(t.machine.acquire(older, ["e": .exclusive], now: t.now).0))
        #expect(t.machine.abortReason(holder) == nil)
        #expect(t.end(holder) == [.grant(ro)])
    }

    @Test("Non-transactional writes wait for the transaction holding the document and wound no one")
    func writersWait() throws {
        var t = Table()
        let txn = t.begin()
        #expect(t.read(txn, "d").0 == .granted)
        let writer = t.writer()
        let r = try #require(Self.requestID(t.commit(writer, "d").0))
        #expect(t.machine.abortReason(txn) == nil)
        #expect(t.commit(txn, "d").0 == .granted)
        #expect(t.end(txn) == [.grant(r)])
        _ = t.end(writer)
        #expect(t.machine.isIdle)
    }

    @Test("Past the hold limit an idle holder is aborted; past the wait limit the waiter fails")
    func timeouts() throws {
        var t = Table()
        let idle = t.begin()
        #expect(t.read(idle, "d").0 == .granted)
        let writer = t.writer()
        let r = try #require(Self.requestID(t.commit(writer, "d").0))
        t.now = .seconds(5)
        #expect(t.machine.expire(r, now: t.now) == [])
        t.now = .seconds(10)
        #expect(t.machine.expire(r, now: t.now) == [.grant(r)])
        #expect(t.machine.abortReason(idle) == .lockTimeout)
        _ = t.end(writer)
        _ = t.end(idle, committed: false)

        // A holder that took its lock recently is not aborted; the waiter times out instead.
        var u = Table()
        let early = u.begin()
        let late = u.begin()
        u.now = .seconds(1)
        #expect(u.read(late, "d").0 == .granted)
        _ = early
        let waiter = u.begin()  // younger than `late`: it waits and wounds no one
        let rw = try #require(Self.requestID(u.commit(waiter, "d").0))
        u.now = .seconds(11)
        // The waiter has waited 10 s and `late` has held d for 10 s: `late` is aborted.
        #expect(u.machine.expire(rw, now: u.now) == [.grant(rw)])
        #expect(u.machine.abortReason(late) == .lockTimeout)

        var v = Table()
        let holder = v.begin()
        #expect(v.commit(holder, "d").0 == .granted)  // committing: never aborted by the hold limit
        let blocked = v.begin()
        let rb = try #require(Self.requestID(v.read(blocked, "d").0))
        v.now = .seconds(10)
        #expect(v.machine.expire(rb, now: v.now) == [])
        v.now = .seconds(20)
        #expect(v.machine.expire(rb, now: v.now) == [.fail(rb, .lockTimeout)])
        #expect(v.machine.abortReason(blocked) == .lockTimeout)
        #expect(v.machine.queue("d").isEmpty)
    }

    @Test("A retry keeps its place in line and reads what it lost exclusively")
    func retryKeepsPosition() throws {
        var t = Table()
        let (first, second) = (t.begin(), t.begin())
        #expect(t.read(first, "d").0 == .granted)
        #expect(t.read(second, "d").0 == .granted)
        // Both upgrade: a deadlock; second, the younger, loses d.
        let rf = try #require(Self.requestID(t.commit(first, "d").0))
        let (lost, actions) = t.commit(second, "d")
        #expect(lost == .aborted(.contention))
        #expect(actions == [.grant(rf)])
        #expect(t.machine.abortReason(second) == .contention)
        _ = t.end(second, committed: false)
        // A newer transaction queues for d before the retry does.
        let newer = t.begin()
        let rn = try #require(Self.requestID(t.read(newer, "d").0))
        let retry = t.begin(retrying: second)
        #expect(t.machine.age(retry) == 2)
        let rr = try #require(Self.requestID(t.read(retry, "d").0))
        #expect(t.machine.queue("d") == [rr, rn])
        // The retry goes first, and reads d exclusively (it lost d once): the newer reader still waits.
        #expect(t.end(first) == [.grant(rr)])
        #expect(t.machine.mode(retry, "d") == .exclusive)
        #expect(t.commit(retry, "d").0 == .granted)
        #expect(t.end(retry) == [.grant(rn)])
        // A committed transaction leaves no place to inherit.
        let fresh = t.begin(retrying: retry)
        #expect(t.machine.age(fresh)! > t.machine.age(newer)!)
    }

    @Test("A three-transaction cycle of waits aborts exactly its youngest member")
    func threeWayDeadlock() throws {
        var t = Table()
        let (t1, t2, t3) = (t.begin(), t.begin(), t.begin())
        for (owner, key) in [(t1, "a"), (t2, "b"), (t3, "c")] {
            #expect(t.machine.acquire(owner, [key: .exclusive], now: t.now).0 == .granted)
        }
        let r1 = try #require(Self.requestID(t.machine.acquire(t1, ["b": .exclusive], now: t.now).0))
        let r3 = try #require(Self.requestID(t.machine.acquire(t3, ["a": .exclusive], now: t.now).0))
        // t2 → c closes t1 → t2 → t3 → t1: t3 is the youngest and is aborted; t2 gets c.
        let (result, actions) = t.machine.acquire(t2, ["c": .exclusive], now: t.now)
        #expect(result == .granted)
        #expect(actions == [.fail(r3, .contention)])
        #expect(t.machine.abortReason(t3) == .contention)
        #expect(t.machine.abortReason(t1) == nil && t.machine.abortReason(t2) == nil)
        #expect(t.end(t2) == [.grant(r1)])
    }

    @Test("Retrying a transaction that is still open releases its locks and takes its age")
    func retryOpen() throws {
        var t = Table()
        let a = t.begin()
        #expect(t.read(a, "d").0 == .granted)
        let writer = t.writer()
        let r = try #require(Self.requestID(t.commit(writer, "d").0))
        let (retry, actions) = t.machine.begin(transactional: true, retrying: a, now: t.now)
        #expect(actions == [.grant(r)])
        #expect(t.machine.age(retry) == 1)
    }

    @Test("One transaction may wait in several requests at once (parallel reads); aborting it fails them all")
    func parallelRequests() throws {
        var t = Table()
        let writer = t.writer()
        #expect(t.commit(writer, "a", "b").0 == .granted)
        let (reader, other) = (t.begin(), t.begin())
        let ra = try #require(Self.requestID(t.read(reader, "a").0))
        let rb = try #require(Self.requestID(t.read(reader, "b").0))
        #expect(Set(t.end(writer)) == [.grant(ra), .grant(rb)])
        #expect(t.machine.holders("a") == [reader: .shared] && t.machine.holders("b") == [reader: .shared])
        // The reader waits for two documents the other holds; the other, younger, then waits for the reader.
        #expect(t.machine.acquire(other, ["c": .exclusive, "d": .exclusive], now: t.now).0 == .granted)
        let rc = try #require(Self.requestID(t.machine.acquire(reader, ["c": .shared], now: t.now).0))
        let rd = try #require(Self.requestID(t.machine.acquire(reader, ["d": .shared], now: t.now).0))
        let (result, actions) = t.machine.acquire(other, ["a": .exclusive], now: t.now)
        #expect(result == .aborted(.contention))
        #expect(Set(actions) == [.grant(rc), .grant(rd)])
        #expect(t.machine.abortReason(reader) == nil)
    }

    @Test("A cancelled waiter leaves the queue and lets the next one in")
    func cancel() throws {
        var t = Table()
        let holder = t.begin()
        #expect(t.read(holder, "d").0 == .granted)
        let writer = t.writer()
        let rw = try #require(Self.requestID(t.commit(writer, "d").0))
        let reader = t.begin()
        let rr = try #require(Self.requestID(t.read(reader, "d").0))  // behind the writer
        #expect(t.machine.cancel(rw, now: t.now) == [.grant(rr)])
        #expect(t.machine.holders("d") == [holder: .shared, reader: .shared])
    }
}
