import Foundation
import Synchronization
import Testing

import HearthClientAuth
import HearthClientCore
@testable import HearthClientDatabase
import HearthClientStorage

/// The Realtime Database client against a live Hearth database port (the WebSocket protocol):
/// events, queries, onDisconnect, transactions under contention, rules, auth, reconnects.
@Suite(.serialized, .timeLimit(.minutes(2))) struct DatabaseClientTests {
    static let rules = """
        {
          "rules": {
            "users": {
              "$uid": {
                ".read": "auth != null && auth.uid == $uid",
                ".write": "auth != null && auth.uid == $uid"
              }
            },
            "open": { ".read": true, ".write": true }
          }
        }
        """

    /// One client: its own app (so its own socket), Auth with a throwaway user store.
    struct Client {
        let database: Database
        let auth: Auth
    }

    static func client(_ ports: [String: Int]) -> Client {
        var options = HearthOptions(projectID: "demo-hearth")
        options.authPort = ports["auth"]!
        options.databasePort = ports["database"]!
        let name = "database-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let app = HearthApp.app(name: name)!
        let auth = Auth.auth(app: app, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
        let database = Database.database(app: app)
        opened.withLock { $0.append(database) }
        return Client(database: database, auth: auth)
    }

    /// The databases a test opened: taken offline when it ends, so no socket keeps retrying a
    /// server that is gone.
    static let opened = Mutex<[Database]>([])

    static func closeOpened() {
        for database in opened.withLock({ opened in defer { opened = [] }; return opened }) { database.goOffline() }
    }

    func withServer(rules: String? = nil, _ body: @Sendable @escaping ([String: Int]) async throws -> Void) async throws {
        try await LiveServer.with(configure: { config, dir in
            if let rules {
                let file = dir.appendingPathComponent("database.rules.json")
                try rules.write(to: file, atomically: true, encoding: .utf8)
                config.databaseRulesFile = file.path
            }
        }) { ports in
            defer { Self.closeOpened() }
            try await body(ports)
        }
    }

    /// What observers saw, as short strings ("added a prev:nil").
    final class Log: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
        func wait(for count: Int) async throws {
            try await databaseEventually("\(count) events, have \(all)") { self.all.count >= count }
        }
    }

    /// The domain and code a call fails with (nil: it succeeded).
    static func code(_ body: () async throws -> Void) async -> (String, Int)? {
        do {
            try await body()
            return nil
        } catch let error as NSError {
            return (error.domain, error.code)
        }
    }

    static func plain(_ snapshot: DataSnapshot) -> String { snapshot.node.exportJSON().serialized() }

    @Test func everyEventTypeInOrderAcrossClients() async throws {
        try await withServer { ports in
            let (reader, writer) = (Self.client(ports), Self.client(ports))
            let messages = reader.database.reference(withPath: "rooms/r1/messages")
            let log = Log()
            let byN = messages.queryOrdered(byChild: "n")
            byN.observe(.childAdded, andPreviousSiblingKeyWith: { s, prev in log.add("added \(s.key) prev:\(prev ?? "nil")") })
            byN.observe(.childChanged, andPreviousSiblingKeyWith: { s, prev in log.add("changed \(s.key) prev:\(prev ?? "nil")") })
            byN.observe(.childMoved, andPreviousSiblingKeyWith: { s, prev in log.add("moved \(s.key) prev:\(prev ?? "nil")") })
            byN.observe(.childRemoved) { s in log.add("removed \(s.key) \(Self.plain(s))") }
            let values = Log()
            messages.observe(.value) { s in values.add(Self.plain(s)) }
            try await values.wait(for: 1)
            #expect(values.all == ["null"])

            let target = writer.database.reference(withPath: "rooms/r1/messages")
            try await target.child("a").setValue(["n": 1])
            try await target.child("b").setValue(["n": 2])
            try await target.child("c").setValue(["n": 3])
            try await log.wait(for: 3)
            #expect(log.all == ["added a prev:nil", "added b prev:a", "added c prev:b"])
            // b moves to the end: changed and moved, with its new previous sibling
            try await target.child("b").updateChildValues(["n": 5])
            try await log.wait(for: 5)
            #expect(Array(log.all[3...]) == ["moved b prev:c", "changed b prev:c"])
            try await target.child("a").removeValue()
            try await log.wait(for: 6)
            #expect(log.all[5] == #"removed a {"n":1}"#)
            try await values.wait(for: 6)
            #expect(values.all.last == #"{"b":{"n":5},"c":{"n":3}}"#)

            // observeSingleEvent, getData, removeObserver and the async sequence
            let once = await messages.child("c").observeSingleEvent(of: .value)
            #expect(once.value as? [String: Int] == ["n": 3])
            let fetched = try await writer.database.reference(withPath: "rooms/r1").getData()
            #expect(fetched.childSnapshot(forPath: "messages/b/n").value as? Int == 5)
            #expect(fetched.hasChild("messages/c"))
            #expect(!fetched.hasChild("messages/a"))
            let stream = messages.queryOrderedByKey().snapshots(of: .childAdded)
            var keys: [String] = []
            for try await snapshot in stream {
                keys.append(snapshot.key)
                if keys.count == 3 { break }
                if keys.count == 2 { try await target.child("d").setValue(["n": 0]) }
            }
            #expect(keys == ["b", "c", "d"])
            messages.removeAllObservers()
            byN.removeAllObservers()
            let countBefore = log.all.count
            try await target.child("e").setValue(["n": 9])
            try await Task.sleep(for: .milliseconds(200))
            #expect(log.all.count == countBefore)
        }
    }

    @Test func queriesSelectTheirWindowLive() async throws {
        try await withServer { ports in
            let client = Self.client(ports)
            let dinos = client.database.reference(withPath: "dinosaurs")
            try await dinos.setValue([
                "bruhathkayosaurus": ["height": 25], "lambeosaurus": ["height": 2.1], "linhenykus": ["height": 0.6],
                "pterodactyl": ["height": 0.6], "stegosaurus": ["height": 4], "triceratops": ["height": 3],
            ])
            func keys(_ query: DatabaseQuery) async throws -> [String] { try await query.getData().childSnapshots.map(\.key) }
            let byHeight = dinos.queryOrdered(byChild: "height")
            #expect(try await keys(byHeight.queryLimited(toFirst: 2)) == ["linhenykus", "pterodactyl"])
            #expect(try await keys(byHeight.queryLimited(toLast: 2)) == ["stegosaurus", "bruhathkayosaurus"])
            #expect(try await keys(byHeight.queryStarting(atValue: 3)) == ["triceratops", "stegosaurus", "bruhathkayosaurus"])
            #expect(try await keys(byHeight.queryStarting(afterValue: 3)) == ["stegosaurus", "bruhathkayosaurus"])
            #expect(try await keys(byHeight.queryEnding(atValue: 2.1)) == ["linhenykus", "pterodactyl", "lambeosaurus"])
            #expect(try await keys(byHeight.queryEnding(beforeValue: 2.1)) == ["linhenykus", "pterodactyl"])
            #expect(try await keys(byHeight.queryEqual(toValue: 0.6)) == ["linhenykus", "pterodactyl"])
            #expect(try await keys(byHeight.queryEqual(toValue: 0.6, childKey: "pterodactyl")) == ["pterodactyl"])
            #expect(try await keys(dinos.queryOrderedByKey().queryStarting(atValue: "p").queryLimited(toFirst: 2)) == ["pterodactyl", "stegosaurus"])
            #expect(try await keys(dinos.queryOrderedByKey().queryEnding(beforeValue: "l")) == ["bruhathkayosaurus"])

            let scores = client.database.reference(withPath: "scores")
            try await scores.setValue(["alice": 30, "bob": 10, "carol": 20, "dave": "n/a"])
            #expect(try await keys(scores.queryOrderedByValue()) == ["bob", "carol", "alice", "dave"])
            #expect(try await keys(scores.queryOrderedByValue().queryLimited(toLast: 1)) == ["dave"])
            let ranked = client.database.reference(withPath: "ranked")
            try await ranked.child("x").setValue("x", andPriority: 2)
            try await ranked.child("y").setValue("y", andPriority: 1)
            try await ranked.child("z").setValue("z")
            #expect(try await keys(ranked.queryOrderedByPriority()) == ["z", "y", "x"])
            #expect(try await ranked.child("x").getData().priority as? Int == 2)

            // a live limitToFirst window: a shorter dinosaur enters, the tallest of the two leaves
            let log = Log()
            let shortest = byHeight.queryLimited(toFirst: 2)
            shortest.observe(.childAdded) { s in log.add("added \(s.key)") }
            shortest.observe(.childRemoved) { s in log.add("removed \(s.key)") }
            let values = Log()
            shortest.observe(.value) { s in values.add(s.childSnapshots.map(\.key).joined(separator: ",")) }
            try await log.wait(for: 2)
            #expect(log.all == ["added linhenykus", "added pterodactyl"])
            try await Self.client(ports).database.reference(withPath: "dinosaurs/compsognathus").setValue(["height": 0.3])
            try await log.wait(for: 4)
            #expect(Array(log.all[2...]) == ["removed pterodactyl", "added compsognathus"])
            try await databaseEventually { values.all.last == "compsognathus,linhenykus" }
        }
    }

    @Test func onDisconnectRunsWhenTheSocketCloses() async throws {
        try await withServer { ports in
            let (leaver, watcher) = (Self.client(ports), Self.client(ports))
            let presence = leaver.database.reference(withPath: "presence/alice")
            try await presence.setValue(["online": true, "room": "lobby"])
            try await presence.child("online").onDisconnectSetValue(false)
            try await presence.onDisconnectUpdateChildValues(["lastSeen": ServerValue.timestamp(), "room": NSNull()])
            try await leaver.database.reference(withPath: "sessions/s1").setValue(true)
            try await leaver.database.reference(withPath: "sessions/s1").onDisconnectRemoveValue()
            try await leaver.database.reference(withPath: "kept").setValue(1)
            try await leaver.database.reference(withPath: "kept").onDisconnectSetValue(2)
            try await leaver.database.reference(withPath: "kept").cancelDisconnectOperations()

            let seen = Log()
            watcher.database.reference(withPath: "presence/alice").observe(.value) { s in seen.add(Self.plain(s)) }
            try await seen.wait(for: 1)
            let connected = Log()
            leaver.database.reference(withPath: ".info/connected").observe(.value) { s in connected.add("\(s.value as? Bool ?? false)") }
            try await databaseEventually { connected.all.last == "true" }
            let before = Int(Date().timeIntervalSince1970 * 1000)
            leaver.database.goOffline()
            try await databaseEventually { connected.all.last == "false" }
            // The server runs the two onDisconnect writes one after the other: a watcher may see
            // the first alone before the second arrives.
            try await databaseEventually("presence updated") {
                seen.all.last.map { $0.contains(#""online":false"#) && $0.contains("lastSeen") } == true
            }
            let after = try await watcher.database.reference(withPath: "presence/alice").getData()
            #expect(after.childSnapshot(forPath: "online").value as? Bool == false)
            #expect(!after.hasChild("room"))
            let lastSeen = try #require(after.childSnapshot(forPath: "lastSeen").value as? Int)
            #expect(lastSeen >= before - 5_000 && lastSeen <= Int(Date().timeIntervalSince1970 * 1000) + 5_000)
            try await databaseEventually {
                try await !watcher.database.reference(withPath: "sessions/s1").getData().exists()
            }
            #expect(try await watcher.database.reference(withPath: "kept").getData().value as? Int == 1)
        }
    }

    @Test func transactionsUnderContentionCountEveryIncrement() async throws {
        try await withServer { ports in
            // 5 tasks × 10 increments over two sockets: each client runs its transactions on one
            // path one at a time (as the SDKs queue them), the two clients race each other and the
            // loser of each round runs again on the value the server pushed.
            let clients = (0..<2).map { _ in Self.client(ports) }
            let runs = Log()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<5 {
                    let client = clients[task % 2]
                    group.addTask {
                        let counter = client.database.reference(withPath: "counters/likes")
                        for _ in 0..<10 {
                            let (committed, snapshot) = try await counter.runTransactionBlock { current in
                                runs.add("run")
                                current.value = (current.value as? Int ?? 0) + 1
                                return TransactionResult.success(withValue: current)
                            }
                            #expect(committed)
                            #expect(snapshot.value as? Int != nil)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = try await clients[0].database.reference(withPath: "counters/likes").getData()
            #expect(total.value as? Int == 50)
            #expect(runs.all.count >= 50)

            // abort leaves the data alone; children and priorities go through MutableData
            let post = clients[1].database.reference(withPath: "posts/p1")
            try await post.setValue(["stars": ["alice": true], "count": 1], andPriority: 7)
            let (aborted, unchanged) = try await post.runTransactionBlock { _ in TransactionResult.abort() }
            #expect(!aborted)
            #expect(unchanged.childSnapshot(forPath: "count").value as? Int == 1)
            let (committed, starred) = try await post.runTransactionBlock { current in
                current.childData(byAppendingPath: "stars/bob").value = true
                let count = current.childData(byAppendingPath: "count")
                count.value = (count.value as? Int ?? 0) + 1
                return .success(withValue: current)
            }
            #expect(committed)
            #expect(starred.childSnapshot(forPath: "count").value as? Int == 2)
            #expect(starred.childSnapshot(forPath: "stars").childrenCount == 2)
            #expect(starred.priority as? Int == 7)
            // the completion-block form
            let done = Mutex<(Bool, Int?)?>(nil)
            post.child("count").runTransactionBlock({ current in
                current.value = (current.value as? Int ?? 0) * 10
                return .success(withValue: current)
            }, andCompletionBlock: { error, committed, snapshot in
                done.withLock { $0 = (committed && error == nil, snapshot?.value as? Int) }
            })
            try await databaseEventually { done.withLock { $0 != nil } }
            #expect(done.withLock { $0?.0 == true && $0?.1 == 20 })
        }
    }

    @Test func rulesDenialsAndAuthOnTheSocket() async throws {
        try await withServer(rules: Self.rules) { ports in
            let client = Self.client(ports)
            // signed out: writes and reads of users/* are refused with the Apple SDK's error
            let denied = await Self.code { try await client.database.reference(withPath: "users/someone").setValue(1) }
            #expect(denied?.0 == DatabaseErrorDomain && denied?.1 == 1)
            let readDenied = await Self.code { _ = try await client.database.reference(withPath: "users/someone").getData() }
            #expect(readDenied?.1 == 1)
            let cancelled = Mutex<NSError?>(nil)
            client.database.reference(withPath: "users/someone").observe(.value, with: { _ in }, withCancel: { error in
                cancelled.withLock { $0 = error as NSError }
            })
            try await databaseEventually { cancelled.withLock { $0 != nil } }
            #expect(cancelled.withLock { $0?.domain == DatabaseErrorDomain && $0?.code == 1 })
            let failed = Mutex<(any Error)?>(nil)
            client.database.reference(withPath: "users/someone").setValue(2) { error, _ in failed.withLock { $0 = error } }
            try await databaseEventually { failed.withLock { $0 != nil } }
            try await client.database.reference(withPath: "open/x").setValue(1)

            // signing in sends the ID token on the open socket: the user's own node is writable
            let uid = try await client.auth.signInAnonymously().user.uid
            try await databaseEventually("auth applied") {
                await Self.code { try await client.database.reference(withPath: "users/\(uid)").setValue(["name": "me"]) } == nil
            }
            let mine = Log()
            client.database.reference(withPath: "users/\(uid)/name").observe(.value) { s in mine.add("\(s.value ?? "")") }
            try await mine.wait(for: 1)
            #expect(mine.all == ["me"])
            let others = await Self.code { try await client.database.reference(withPath: "users/someone").setValue(1) }
            #expect(others?.1 == 1)

            // signing out sends unauth: the listen is revoked and writes are refused again
            let revoked = Mutex<NSError?>(nil)
            client.database.reference(withPath: "users/\(uid)").observe(.value, with: { _ in }, withCancel: { error in
                revoked.withLock { $0 = error as NSError }
            })
            try client.auth.signOut()
            try await databaseEventually("listen revoked") { revoked.withLock { $0 != nil } }
            #expect(revoked.withLock { $0?.code == 1 })
            try await databaseEventually("unauth applied") {
                await Self.code { try await client.database.reference(withPath: "users/\(uid)").setValue(["name": "again"]) }?.1 == 1
            }
        }
    }

    @Test func offlineWritesQueueInOrderAndListensComeBack() async throws {
        try await withServer { ports in
            let (client, other) = (Self.client(ports), Self.client(ports))
            let list = client.database.reference(withPath: "queue")
            let seen = Log()
            list.observe(.childAdded) { s in seen.add("\(s.key)=\(s.value ?? "")") }
            try await list.child("first").setValue(0)
            try await seen.wait(for: 1)
            client.database.goOffline()
            // written while offline: kept in memory, sent in order on reconnect
            let acknowledged = Log()
            for i in 1...5 {
                list.child("w\(i)").setValue(i) { error, _ in acknowledged.add(error == nil ? "ok\(i)" : "error\(i)") }
            }
            list.child("w1").setValue(10) { error, _ in acknowledged.add(error == nil ? "ok-last" : "error-last") }
            try await Task.sleep(for: .milliseconds(300))
            #expect(acknowledged.all.isEmpty)
            // getData offline: a listened location answers from its data with the pending
            // writes over it (as the SDKs' local view); others fail at once
            #expect(try await list.getData().childSnapshots.map(\.key) == ["first", "w1", "w2", "w3", "w4", "w5"])
            #expect(try await list.child("w1").getData().value as? Int == 10)
            let offlineRead = await Self.code { _ = try await client.database.reference(withPath: "elsewhere").getData() }
            #expect(offlineRead?.0 == DatabaseErrorDomain && offlineRead?.1 == 2)
            #expect(try await other.database.reference(withPath: "queue/w1").getData().exists() == false)
            client.database.goOnline()
            try await acknowledged.wait(for: 6)
            #expect(acknowledged.all == ["ok1", "ok2", "ok3", "ok4", "ok5", "ok-last"])
            #expect(try await other.database.reference(withPath: "queue/w1").getData().value as? Int == 10)
            // the listen was re-established: another client's write arrives
            try await other.database.reference(withPath: "queue/zz").setValue("late")
            try await databaseEventually { seen.all.contains("zz=late") }

            // a dropped socket (not goOffline): reconnected after the backoff, listens re-sent
            let connected = Log()
            client.database.reference(withPath: ".info/connected").observe(.value) { s in connected.add("\(s.value as? Bool ?? false)") }
            try await databaseEventually { connected.all.last == "true" }
            client.database.repo.state.withLock { s in s.outbound?.finish() }
            try await databaseEventually("disconnected") { connected.all.contains("false") }
            try await databaseEventually("reconnected") { connected.all.last == "true" }
            try await other.database.reference(withPath: "queue/zzz").setValue("after drop")
            try await databaseEventually { seen.all.contains("zzz=after drop") }
        }
    }

    struct Message: Codable, Equatable {
        var text: String
        var author: String
        var likes: Int
        var tags: [String]
        var editedAt: Double?
    }

    @Test func codableAutoIdsAndServerValues() async throws {
        try await withServer { ports in
            let client = Self.client(ports)
            let messages = client.database.reference(withPath: "codable/messages")
            let first = messages.childByAutoId()
            let second = messages.childByAutoId()
            #expect(first.key!.count == 20 && first.key! < second.key!)
            #expect(first.parent?.key == "messages")
            #expect(first.root.key == nil)
            let message = Message(text: "hello", author: "ada", likes: 2, tags: ["a", "b"], editedAt: nil)
            try first.setValue(from: message)
            try second.setValue(from: Message(text: "second", author: "bob", likes: 0, tags: [], editedAt: 1.5))
            try await databaseEventually { try await second.getData().exists() }
            let snapshot = try await first.getData()
            #expect(try snapshot.data(as: Message.self) == message)
            let ordered = try await messages.getData().childSnapshots.map(\.key)
            #expect(ordered == [first.key!, second.key!])
            // server values resolve on the server
            let stats = client.database.reference(withPath: "codable/stats")
            try await stats.setValue(["views": 1, "updatedAt": ServerValue.timestamp()])
            try await stats.updateChildValues(["views": ServerValue.increment(41)])
            let resolved = try await stats.getData()
            #expect(resolved.childSnapshot(forPath: "views").value as? Int == 42)
            let time = try #require(resolved.childSnapshot(forPath: "updatedAt").value as? Int)
            #expect(abs(time - Int(Date().timeIntervalSince1970 * 1000)) < 60_000)
            // multi-path updates and invalid values
            try await client.database.reference(withPath: "codable").updateChildValues(["a/b": 1, "c": ["d": true]])
            let tree = try await client.database.reference(withPath: "codable").getData()
            #expect(tree.childSnapshot(forPath: "a/b").value as? Int == 1)
            #expect(tree.childSnapshot(forPath: "c/d").value as? Bool == true)
            await #expect(throws: NSError.self) { try await stats.setValue(["bad.key": 1]) }
            await #expect(throws: NSError.self) { try await stats.setValue(Date()) }
        }
    }

    /// `useEmulator(withHost:port:)`, `database(url:)` with a Hearth URL and `?ns=`, and references' URLs.
    @Test func emulatorSettingsAndNamespaces() async throws {
        try await withServer { ports in
            var options = HearthOptions(projectID: "demo-hearth")
            options.databasePort = 1  // wrong on purpose: useEmulator decides
            let name = "emulator-\(UUID().uuidString)"
            HearthApp.configure(name: name, options: options)
            let app = HearthApp.app(name: name)!
            _ = Auth.auth(app: app, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
            let database = Database.database(app: app)
            Self.opened.withLock { $0.append(database) }
            #expect(Database.database(app: app) === database)
            database.useEmulator(withHost: "127.0.0.1", port: ports["database"]!)
            let ref = database.reference(withPath: "/greeting/")
            #expect(ref.url == "https://demo-hearth-default-rtdb.firebaseio.com/greeting")
            try await ref.setValue("hello")
            #expect(try await ref.getData().value as? String == "hello")
            // another namespace on the same server, by URL
            let other = Database.database(app: app, url: "http://127.0.0.1:\(ports["database"]!)?ns=other-db")
            Self.opened.withLock { $0.append(other) }
            #expect(other !== database)
            #expect(try await other.reference(withPath: "greeting").getData().exists() == false)
            try await other.reference(withPath: "greeting").setValue("bonjour")
            #expect(try await ref.getData().value as? String == "hello")
            #expect(other.reference().child("a b").url == "http://127.0.0.1:\(ports["database"]!)/a%20b?ns=other-db")
        }
    }

    /// Drift's flow: a bottle created in the database first (push id), its media uploaded to
    /// Storage under `bottles/{bottleId}/…`, only the Storage paths kept in the database; chat
    /// messages by push key with their media beside them; the reader finds the files by path.
    @Test func driftBottleFlow() async throws {
        try await LiveServer.with(configure: { config, dir in
            let file = dir.appendingPathComponent("storage.rules")
            try """
                rules_version = '2';
                service firebase.storage {
                  match /b/{bucket}/o {
                    match /bottles/{rest=**} { allow read, write: if request.auth != null; }
                  }
                }
                """.write(to: file, atomically: true, encoding: .utf8)
            config.storageRulesFile = file.path
        }) { ports in
            var options = HearthOptions(projectID: "demo-hearth")
            options.authPort = ports["auth"]!
            options.databasePort = ports["database"]!
            options.storagePort = ports["storage"]!
            let name = "drift-\(UUID().uuidString)"
            HearthApp.configure(name: name, options: options)
            let app = HearthApp.app(name: name)!
            let auth = Auth.auth(app: app, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
            let uid = try await auth.signInAnonymously().user.uid
            let database = Database.database(app: app)
            Self.opened.withLock { $0.append(database) }
            defer { Self.closeOpened() }
            let storage = Storage.storage(app: app)

            // 1. the bottle exists in the database first
            let bottle = database.reference().child("bottles").childByAutoId()
            let bottleId = try #require(bottle.key)
            try await bottle.setValue(["owner": uid, "createdAt": ServerValue.timestamp(), "state": "floating"])
            // 2-4. media under bottles/{bottleId}/content/, the paths (not URLs) in the database
            let imagePath = "bottles/\(bottleId)/content/message_image.jpg"
            let image = Data((0..<4096).map { UInt8($0 % 253) })
            let metadata = StorageMetadata()
            metadata.contentType = "image/jpeg"
            _ = try await storage.reference(withPath: imagePath).putDataAsync(image, metadata: metadata)
            try await bottle.child("content").updateChildValues(["image_path": imagePath, "text": "hello sea"])

            // chat: a message id from the push key, its media beside it, seen by a listener
            let seen = Log()
            bottle.child("chat").queryOrderedByKey().observe(.childAdded) { snapshot in
                seen.add((snapshot.childSnapshot(forPath: "image_path").value as? String) ?? "")
            }
            let message = bottle.child("chat").childByAutoId()
            let chatImagePath = "bottles/\(bottleId)/chat/\(message.key!)/image.jpg"
            _ = try await storage.reference(withPath: chatImagePath).putDataAsync(Data("chat".utf8), metadata: metadata)
            try await message.setValue(["from": uid, "image_path": chatImagePath])
            try await seen.wait(for: 1)
            #expect(seen.all == [chatImagePath])

            // the reader: paths from the database, bytes from Storage
            let snapshot = try await bottle.getData()
            let storedPath = try #require(snapshot.childSnapshot(forPath: "content/image_path").value as? String)
            #expect(try await storage.reference(withPath: storedPath).data(maxSize: 1 << 20) == image)
            #expect(snapshot.childSnapshot(forPath: "createdAt").value is Int)
            let chatPath = try #require(snapshot.childSnapshot(forPath: "chat/\(message.key!)/image_path").value as? String)
            #expect(try await storage.reference(withPath: chatPath).data(maxSize: 1 << 20) == Data("chat".utf8))
            // the bottle expires: marked in a transaction only if still floating
            let (committed, after) = try await bottle.child("state").runTransactionBlock { current in
                guard current.value as? String == "floating" else { return .abort() }
                current.value = "expired"
                return .success(withValue: current)
            }
            #expect(committed)
            #expect(after.value as? String == "expired")
        }
    }
}

