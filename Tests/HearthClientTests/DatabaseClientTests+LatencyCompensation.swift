import Foundation
import Synchronization
import Testing

import HearthClientCore
@testable import HearthClientDatabase

/// Latency compensation against the in-process server: local writes seen at once (offline too),
/// exactly once across the acknowledgement, reverted on a refusal, limit windows, transactions
/// shown locally, server timestamps estimated then corrected. In the `DatabaseClientTests`
/// suite, whose tests run one at a time.
extension DatabaseClientTests {
    static let validatingRules = """
        {
          "rules": {
            "open": { ".read": true, ".write": true },
            "checked": { ".read": true, "$item": { ".write": true, ".validate": "newData.isNumber()" } },
            "locked": { ".read": true, ".write": false }
          }
        }
        """

    /// Every event type of `query` into `log` as "added a=1", "value {…}".
    static func record(_ query: DatabaseQuery, into log: Log, value: Bool = true) {
        query.observe(.childAdded) { s in log.add("added \(s.key)=\(plain(s))") }
        query.observe(.childChanged) { s in log.add("changed \(s.key)=\(plain(s))") }
        query.observe(.childMoved) { s in log.add("moved \(s.key)") }
        query.observe(.childRemoved) { s in log.add("removed \(s.key)") }
        if value { query.observe(.value) { s in log.add("value \(plain(s))") } }
    }

    /// The log's entries after the first `count`.
    static func after(_ count: Int, _ log: Log) -> [String] { Array(log.all.dropFirst(count)) }

    @Test func localWritesFireAtOnceOfflineAndOnceAcrossTheAck() async throws {
        try await withServer { ports in
            let (client, other) = (Self.client(ports), Self.client(ports))
            let list = client.database.reference(withPath: "lc/list")
            try await list.setValue(["a": 1, "b": 2])
            let log = Log()
            Self.record(list.queryOrderedByValue(), into: log)
            try await log.wait(for: 3)
            #expect(log.all == ["added a=1", "added b=2", #"value {"a":1,"b":2}"#])

            // offline: nothing can be acknowledged, and every kind of write is seen at once
            client.database.goOffline()
            let acks = Log()
            list.child("c").setValue(3) { error, _ in acks.add(error == nil ? "ok c" : "error c") }
            try await log.wait(for: 5)
            #expect(Self.after(3, log) == ["added c=3", #"value {"a":1,"b":2,"c":3}"#])
            list.updateChildValues(["a": 10, "b": NSNull()]) { error, _ in acks.add(error == nil ? "ok update" : "error update") }
            try await log.wait(for: 9)
            #expect(Self.after(5, log) == ["removed b", "moved a", "changed a=10", #"value {"a":10,"c":3}"#])
            list.child("c").removeValue { error, _ in acks.add(error == nil ? "ok remove" : "error remove") }
            let pushed = list.childByAutoId()
            pushed.setValue(0) { error, _ in acks.add(error == nil ? "ok push" : "error push") }
            try await log.wait(for: 13)
            #expect(Self.after(9, log) == ["removed c", #"value {"a":10}"#, "added \(pushed.key!)=0", #"value {"\#(pushed.key!)":0,"a":10}"#])
            #expect(acks.all.isEmpty)
            #expect(try await other.database.reference(withPath: "lc/list").getData().value as? [String: Int] == ["a": 1, "b": 2])

            // online again: the writes go out in order, their echoes and acks raise nothing new
            client.database.goOnline()
            try await acks.wait(for: 4)
            #expect(acks.all == ["ok c", "ok update", "ok remove", "ok push"])
            try await Task.sleep(for: .milliseconds(300))
            #expect(log.all.count == 13)
            #expect(try await other.database.reference(withPath: "lc/list").getData().value as? [String: Int] == ["a": 10, pushed.key!: 0])

            // online: the write's events come before its completion block, once
            let before = log.all.count
            let done = Log()
            list.child("d").setValue(5) { error, _ in
                done.add("ack")
                log.add(error == nil ? "ack d" : "error d")
            }
            try await done.wait(for: 1)
            try await Task.sleep(for: .milliseconds(300))
            #expect(Self.after(before, log) == ["added d=5", #"value {"\#(pushed.key!)":0,"a":10,"d":5}"#, "ack d"])

            // a fresh location observed offline: a set there is its whole value, a child set
            // whole is a child event (no value yet: the rest is unknown)
            let offline = Self.client(ports)
            offline.database.goOffline()
            let fresh = Log()
            offline.database.reference(withPath: "lc/fresh").observe(.value) { s in fresh.add("value \(Self.plain(s))") }
            offline.database.reference(withPath: "lc/partial").observe(.childAdded) { s in fresh.add("added \(s.key)") }
            offline.database.reference(withPath: "lc/partial").observe(.value) { s in fresh.add("partial \(Self.plain(s))") }
            offline.database.reference(withPath: "lc/fresh").setValue(["x": 1], withCompletionBlock: nil)
            offline.database.reference(withPath: "lc/partial/k").setValue(true, withCompletionBlock: nil)
            try await fresh.wait(for: 2)
            try await Task.sleep(for: .milliseconds(200))
            #expect(fresh.all == [#"value {"x":1}"#, "added k"])
            offline.database.goOnline()
            try await fresh.wait(for: 3)
            #expect(fresh.all.last == #"partial {"k":true}"#)
            try await Task.sleep(for: .milliseconds(200))
            #expect(fresh.all.count == 3)
        }
    }

    @Test func refusedWritesAreRevertedBeforeTheirCompletion() async throws {
        try await withServer(rules: Self.validatingRules) { ports in
            let client = Self.client(ports)
            let checked = client.database.reference(withPath: "checked")
            try await checked.child("a").setValue(1)
            let log = Log()
            Self.record(checked, into: log)
            try await log.wait(for: 2)
            #expect(log.all == ["added a=1", #"value {"a":1}"#])

            // a new child that fails validation: shown, taken back, then the error
            checked.child("b").setValue("text") { error, _ in log.add("completion \((error as NSError?)?.code ?? 0)") }
            try await log.wait(for: 7)
            #expect(Self.after(2, log) == [
                #"added b="text""#, #"value {"a":1,"b":"text"}"#, "removed b", #"value {"a":1}"#, "completion 1",
            ])
            // a change that fails: changed and changed back
            checked.child("a").setValue("bad") { error, _ in log.add("completion \((error as NSError?)?.code ?? 0)") }
            try await log.wait(for: 12)
            #expect(Self.after(7, log) == [
                #"changed a="bad""#, #"value {"a":"bad"}"#, "changed a=1", #"value {"a":1}"#, "completion 1",
            ])
            // the async form throws the same error after the revert
            let locked = client.database.reference(withPath: "locked")
            let values = Log()
            locked.observe(.value) { s in values.add(Self.plain(s)) }
            try await values.wait(for: 1)
            let denied = await Self.code { try await locked.setValue(5) }
            #expect(denied?.0 == DatabaseErrorDomain && denied?.1 == 1)
            try await values.wait(for: 3)
            #expect(values.all == ["null", "5", "null"])
            // a refused write between accepted ones: only its own change is taken back
            let acks = Log()
            checked.child("c").setValue(3) { error, _ in acks.add("c \(error == nil)") }
            checked.child("d").setValue("no") { error, _ in acks.add("d \(error == nil)") }
            checked.child("e").setValue(5) { error, _ in acks.add("e \(error == nil)") }
            try await acks.wait(for: 3)
            #expect(acks.all == ["c true", "d false", "e true"])
            try await databaseEventually { log.all.last == #"value {"a":1,"c":3,"e":5}"# }
            #expect(try await checked.getData().value as? [String: Int] == ["a": 1, "c": 3, "e": 5])
        }
    }

    @Test func limitWindowsFollowLocalWrites() async throws {
        try await withServer { ports in
            let client = Self.client(ports)
            let scores = client.database.reference(withPath: "lc/scores")
            try await scores.setValue(["a": 1, "b": 2, "c": 3])
            let log = Log()
            let top = scores.queryOrderedByValue().queryLimited(toLast: 2)
            Self.record(top, into: log)
            try await log.wait(for: 3)
            #expect(log.all == ["added b=2", "added c=3", #"value {"b":2,"c":3}"#])

            // offline: a higher score enters the window at once and pushes the lowest out
            client.database.goOffline()
            let acks = Log()
            scores.child("d").setValue(10) { error, _ in acks.add("d \(error == nil)") }
            try await log.wait(for: 6)
            #expect(Self.after(3, log) == ["removed b", "added d=10", #"value {"c":3,"d":10}"#])
            client.database.goOnline()
            try await acks.wait(for: 1)
            #expect(acks.all == ["d true"])
            try await Task.sleep(for: .milliseconds(300))
            #expect(log.all.count == 6)

            // online: a write that reorders the window is seen once, acknowledged silently
            scores.child("c").setValue(20) { error, _ in acks.add("c \(error == nil)") }
            try await acks.wait(for: 2)
            try await Task.sleep(for: .milliseconds(300))
            #expect(Self.after(6, log) == ["moved c", "changed c=20", #"value {"c":20,"d":10}"#])
            // removing a child the window shows: out at once; the next one comes from the server
            scores.child("d").removeValue(completionBlock: nil)
            try await databaseEventually { log.all.last == #"value {"b":2,"c":20}"# }
            #expect(Self.after(9, log).prefix(2) == ["removed d", #"value {"c":20}"#])
            #expect(Self.after(9, log).filter { $0.hasPrefix("added") } == ["added b=2"])
        }
    }

    @Test func transactionsRunOnTheLocalValueAndShowTheirResult() async throws {
        try await withServer { ports in
            let (client, other) = (Self.client(ports), Self.client(ports))
            let counter = client.database.reference(withPath: "lc/counter")
            try await counter.setValue(5)
            let values = Log()
            counter.observe(.value) { s in values.add(Self.plain(s)) }
            try await values.wait(for: 1)
            #expect(values.all == ["5"])

            // applyLocally: the result is seen at once, offline; committed once online, no repeat
            client.database.goOffline()
            let runs = Log()
            let outcome = Log()
            counter.runTransactionBlock({ current in
                runs.add("\(current.value ?? "nil")")
                current.value = (current.value as? Int ?? 0) + 1
                return .success(withValue: current)
            }, andCompletionBlock: { error, committed, snapshot in
                outcome.add("\(error == nil) \(committed) \(snapshot.map(Self.plain) ?? "nil")")
            }, withLocalEvents: true)
            try await values.wait(for: 2)
            #expect(values.all == ["5", "6"])
            #expect(outcome.all.isEmpty)
            client.database.goOnline()
            try await outcome.wait(for: 1)
            #expect(outcome.all == ["true true 6"])
            #expect(runs.all == ["5"])
            try await Task.sleep(for: .milliseconds(300))
            #expect(values.all == ["5", "6"])

            // applyLocally false: nothing shown until the server has it
            client.database.goOffline()
            counter.runTransactionBlock({ current in
                current.value = (current.value as? Int ?? 0) + 1
                return .success(withValue: current)
            }, andCompletionBlock: { error, committed, snapshot in
                outcome.add("\(error == nil) \(committed) \(snapshot.map(Self.plain) ?? "nil")")
            }, withLocalEvents: false)
            try await Task.sleep(for: .milliseconds(300))
            #expect(values.all == ["5", "6"])
            client.database.goOnline()
            try await outcome.wait(for: 2)
            #expect(outcome.all.last == "true true 7")
            try await values.wait(for: 3)
            #expect(values.all == ["5", "6", "7"])

            // a stale local run: shown, reverted when the server refuses its hash, run again on
            // the server's newer value
            client.database.goOffline()
            try await other.database.reference(withPath: "lc/counter").setValue(100)
            runs.entries.withLock { $0 = [] }
            counter.runTransactionBlock({ current in
                runs.add("\(current.value ?? "nil")")
                current.value = (current.value as? Int ?? 0) + 1
                return .success(withValue: current)
            }, andCompletionBlock: { error, committed, snapshot in
                outcome.add("\(error == nil) \(committed) \(snapshot.map(Self.plain) ?? "nil")")
            })
            try await values.wait(for: 4)
            #expect(values.all.last == "8")
            client.database.goOnline()
            try await outcome.wait(for: 3)
            #expect(outcome.all.last == "true true 101")
            #expect(runs.all == ["7", "100"])
            try await databaseEventually { values.all.last == "101" }
            #expect(!values.all.dropFirst(4).contains("8"))

            // an abort changes nothing; a pending set is what the next run sees
            client.database.goOffline()
            counter.setValue(50, withCompletionBlock: nil)
            try await databaseEventually { values.all.last == "50" }
            let (aborted, seen) = try await counter.runTransactionBlock { current in
                runs.add("\(current.value ?? "nil")")
                return .abort()
            }
            #expect(!aborted)
            #expect(seen.value as? Int == 50)
            #expect(runs.all.last == "50")
            client.database.goOnline()
            try await databaseEventually { try await other.database.reference(withPath: "lc/counter").getData().value as? Int == 50 }

            // a set at the location overrides a transaction the server has not taken yet: its
            // local result is replaced, it fails with the SDKs' "set" error, only the set is sent
            try await databaseEventually { values.all.last == "50" }
            client.database.goOffline()
            let overridden = Log()
            counter.runTransactionBlock({ current in
                current.value = (current.value as? Int ?? 0) + 1
                return .success(withValue: current)
            }, andCompletionBlock: { error, committed, _ in
                let error = error as NSError?
                overridden.add("\(error?.domain ?? "") \(error?.code ?? 0) \(error?.localizedDescription ?? "") \(committed)")
            })
            try await databaseEventually { values.all.last == "51" }
            let seenBefore = values.all.count
            counter.setValue(0, withCompletionBlock: nil)
            try await overridden.wait(for: 1)
            #expect(overridden.all == ["\(DatabaseErrorDomain) 9999 set false"])
            try await databaseEventually { values.all.last == "0" }
            #expect(Self.after(seenBefore, values) == ["0"])
            client.database.goOnline()
            try await databaseEventually { try await other.database.reference(withPath: "lc/counter").getData().value as? Int == 0 }
            try await Task.sleep(for: .milliseconds(300))
            #expect(Self.after(seenBefore, values) == ["0"])
        }
    }

    /// Frames fed by hand (no server): an ack that comes before the listen's data keeps the
    /// acknowledged write shown, so nothing is taken away and added back.
    @Test func anAckBeforeTheListensDataTakesNothingAway() async throws {
        var options = HearthOptions(projectID: "demo-latency")
        options.databasePort = 1
        let name = "latency-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let database = Database.database(app: HearthApp.app(name: name)!)
        database.goOffline()
        let repo = database.repo
        let (_, outbound) = AsyncStream.makeStream(of: String.self)
        let generation = repo.state.withLock { s -> Int in
            s.outbound = outbound
            return s.generation
        }
        let ref = database.reference(withPath: "x")
        let log = Log()
        ref.setValue(["v": 1]) { error, _ in log.add(error == nil ? "ack" : "error") }  // request 1
        Self.record(ref, into: log)  // the listen: request 2
        try await log.wait(for: 2)
        #expect(log.all == ["added v=1", #"value {"v":1}"#])
        #expect(repo.receive(#"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#, generation: generation))
        try await log.wait(for: 3)
        #expect(repo.receive(#"{"t":"d","d":{"a":"d","b":{"p":"x","d":{"v":1}}}}"#, generation: generation))
        #expect(repo.receive(#"{"t":"d","d":{"r":2,"b":{"s":"ok","d":{}}}}"#, generation: generation))
        // the server's data now shows through; then a change from elsewhere is one event
        #expect(repo.receive(#"{"t":"d","d":{"a":"d","b":{"p":"x/v","d":2}}}"#, generation: generation))
        try await log.wait(for: 5)
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all == ["added v=1", #"value {"v":1}"#, "ack", "changed v=2", #"value {"v":2}"#])
        #expect(repo.state.withLock { $0.writeTree.isEmpty && $0.listens.values.allSatisfy { $0.acked.isEmpty } })
    }

    @Test func serverTimestampsAreEstimatedThenCorrected() async throws {
        try await withServer { ports in
            let client = Self.client(ports)
            let stats = client.database.reference(withPath: "lc/stats")
            try await stats.setValue(["views": 1])
            let values = Log()
            stats.observe(.value) { s in values.add(Self.plain(s)) }
            try await values.wait(for: 1)
            let connected = Log()
            client.database.reference(withPath: ".info/connected").observe(.value) { s in connected.add("\(s.value as? Bool ?? false)") }
            try await databaseEventually { connected.all.last == "true" }
            // pretend the server's clock is an hour ahead: the local estimate uses the offset
            client.database.repo.state.withLock { $0.serverTimeOffset = 3_600_000 }
            let start = Date().timeIntervalSince1970 * 1000
            let acked = Log()
            stats.updateChildValues(["at": ServerValue.timestamp(), "views": ServerValue.increment(41)]) { error, _ in
                acked.add("\(error == nil)")
            }
            try await acked.wait(for: 1)
            try await databaseEventually { values.all.count >= 3 }
            let seen = try values.all.map { try DatabaseJSON.parse($0) }
            let estimated = try #require(seen[1]["at"]?.numberValue)
            let corrected = try #require(seen.last?["at"]?.numberValue)
            let end = Date().timeIntervalSince1970 * 1000
            #expect(estimated >= start + 3_600_000 - 1 && estimated <= end + 3_600_000)
            #expect(corrected >= start - 5_000 && corrected <= end + 5_000)
            #expect(seen[1]["views"]?.numberValue == 42)
            #expect(seen.last?["views"]?.numberValue == 42)
            try await Task.sleep(for: .milliseconds(200))
            #expect(values.all.count == 3)
        }
    }
}
