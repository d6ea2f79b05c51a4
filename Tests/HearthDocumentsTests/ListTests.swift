import Foundation
import HearthCore
import HearthDocuments
import HearthSQLite
import Testing

@Suite("ListDocuments and ListCollectionIds")
struct ListTests {
    static func list(
        _ db: Hearth, _ collection: String, parent: String = "", pageSize: Int?, token: String? = nil, orderBy: [Query.Order] = [],
        showMissing: Bool = false, consistency: ReadConsistency = .latest
    ) async throws -> DocumentEngine.ListResult {
        try await db.engine.listDocuments(
            db.database, parent: path(parent), collectionId: collection, pageSize: pageSize, pageToken: token, orderBy: orderBy, mask: nil,
            showMissing: showMissing, consistency: consistency)
    }

    @Test("Pages follow each other through page tokens until the last one", arguments: Backend.allCases)
    func paging(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let ids = ["a", "b", "c", "d", "e", "f", "g"]
            try await db.commit(ids.enumerated().map { .set(path("l/\($0.element)"), ["v": .integer(Int64($0.offset % 3))]) })
            try await db.set("l/a/sub/x", [:])
            var seen: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let page = try await Self.list(db, "l", pageSize: 3, token: token)
                #expect(page.documents.count <= 3)
                seen += page.documents.map(\.path.lastSegment)
                token = page.nextPageToken
                pages += 1
            } while token != nil && pages < 10
            #expect(seen == ids)
            #expect(pages == 3)

            // Exactly full pages: no token after the last full page.
            let six = try await Self.list(db, "l", pageSize: 6)
            #expect(six.documents.count == 6)
            let rest = try await Self.list(db, "l", pageSize: 6, token: six.nextPageToken)
            #expect(rest.documents.map(\.path.lastSegment) == ["g"])
            #expect(rest.nextPageToken == nil)
            let all = try await Self.list(db, "l", pageSize: 7)
            #expect(all.nextPageToken == nil)
            #expect(try await Self.list(db, "l", pageSize: nil).documents.count == 7)
            #expect(try await Self.list(db, "l", pageSize: 0).documents.count == 7)

            // Ordered by a field with ties, descending.
            seen = []
            token = nil
            pages = 0
            repeat {
                let page = try await Self.list(db, "l", pageSize: 2, token: token, orderBy: [Query.Order(field("v"), descending: true)])
                seen += page.documents.map(\.path.lastSegment)
                token = page.nextPageToken
                pages += 1
            } while token != nil && pages < 10
            #expect(seen == ["f", "c", "e", "b", "g", "d", "a"])
        }
    }

    @Test("showMissing lists missing parents of sub-collections", arguments: Backend.allCases)
    func showMissing(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit([
                .set(path("l/real"), [:]), .set(path("l/ghost/sub/x"), [:]), .set(path("l/real/sub/y"), [:]), .set(path("l/deep/a/b/c/d"), [:]),
                .set(path("lx/other/sub/z"), [:]),
            ])
            let r = try await Self.list(db, "l", pageSize: nil, showMissing: true)
            #expect(r.documents.map(\.path.text) == ["l/real"])
            #expect(r.missing.map(\.text) == ["l/deep", "l/ghost"])
            let plain = try await Self.list(db, "l", pageSize: nil)
            #expect(plain.documents.map(\.path.text) == ["l/real"])
            #expect(plain.missing.isEmpty)
        }
    }

    @Test("Bad list requests are INVALID_ARGUMENT", arguments: Backend.allCases)
    func invalid(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("l/a", [:])
            await expectError(.invalidArgument) { _ = try await Self.list(db, "l", pageSize: 1, token: "garbage") }
            await expectError(.invalidArgument) { _ = try await Self.list(db, "l", pageSize: 1, token: "H1" + Data([1, 2, 3]).base64EncodedString()) }
            await expectError(.invalidArgument) { _ = try await Self.list(db, "l", pageSize: -1) }
            await expectError(.invalidArgument) { _ = try await Self.list(db, "x", parent: "l", pageSize: 1) }
            await expectError(.invalidArgument) { _ = try await Self.list(db, "__l__", pageSize: 1) }
            await expectError(.invalidArgument) { _ = try await db.engine.listCollectionIds(db.database, parent: path("l")) }
        }
    }

    /// Page tokens come from clients; a crafted one must be rejected, not crash the server.
    /// (Runs in a child process so that a crash fails only this test.)
    @Test("A crafted page token with a huge length is rejected, not a crash")
    func craftedPageToken() async {
        await #expect(processExitsWith: .success) {
            let engine = try await DocumentEngine(store: try SQLiteDocumentStore.inMemory())
            let db = DatabaseName(project: "demo", database: "(default)")
            _ = try await engine.commit(db, [.set(ResourcePath(parsing: "l/a"), [:])])
            let evil: [UInt8] = [1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
            do {
                _ = try await engine.listDocuments(
                    db, parent: .root, collectionId: "l", pageSize: 1, pageToken: "H1" + Data(evil).base64EncodedString(), orderBy: [], mask: nil,
                    showMissing: false)
                fatalError("accepted a corrupt page token")
            } catch let e as HearthError where e.code == .invalidArgument {
                // expected
            }
        }
    }

    @Test("Collection ids under the root and under (possibly missing) documents, in UTF-8 order", arguments: Backend.allCases)
    func collectionIds(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit([
                "a/1", "a-b/1", "a0/1", "b/1/sub/x", "b/1/sub2/y", "b/1/sub/z", "b/10/other/q", "\u{E9}/1", "\u{FFFF}/1", "\u{1F600}/1", "a/2",
            ].map { .set(path($0), [:]) })
            #expect(try await db.engine.listCollectionIds(db.database, parent: .root) == ["a", "a-b", "a0", "b", "\u{E9}", "\u{FFFF}", "\u{1F600}"])
            #expect(try await db.engine.listCollectionIds(db.database, parent: path("b/1")) == ["sub", "sub2"])
            #expect(try await db.engine.listCollectionIds(db.database, parent: path("b/10")) == ["other"])
            #expect(try await db.engine.listCollectionIds(db.database, parent: path("a/1")) == [])
            #expect(try await db.engine.listCollectionIds(db.database, parent: path("b/1/sub/x")) == [])
        }
    }

    /// A collection id that sorts just before "id/" (like "users-old" next to "users", whose
    /// documents have sub-collections) must not send the skip-scan back to an earlier id.
    /// Runs in a child process that gives up after 10 seconds, as a regression would loop forever.
    @Test("listCollectionIds terminates with ids that are prefixes of their neighbours")
    func collectionIdsNeighbours() async {
        await #expect(processExitsWith: .success) {
            let engine = try await DocumentEngine(store: try SQLiteDocumentStore.inMemory())
            let db = DatabaseName(project: "demo", database: "(default)")
            _ = try await engine.commit(db, ["users/u1", "users/u1/posts/p1", "users-old/u0", "users.x/u2"].map { .set(ResourcePath(parsing: $0), [:]) })
            // A watchdog: a looping skip-scan never returns, so end this child process with a failure.
            Task.detached {
                try await Task.sleep(for: .seconds(10))
                exit(3)
            }
            let ids = try await engine.listCollectionIds(db, parent: .root)
            guard ids == ["users", "users-old", "users.x"] else { exit(4) }
        }
    }

    @Test("Collection ids starting with U+10FFFF are listed and queried", arguments: Backend.allCases)
    func highestCodePoint(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit([.set(path("a/1"), [:]), .set(path("\u{10FFFF}/1"), [:]), .set(path("\u{10FFFF}x/1"), [:])])
            #expect(try await db.engine.listCollectionIds(db.database, parent: .root) == ["a", "\u{10FFFF}", "\u{10FFFF}x"])
            #expect(try await db.names(Query(collectionId: "", allDescendants: true)).count == 3)
        }
    }

    @Test("listCollectionIds honours read_time", arguments: Backend.allCases)
    func collectionIdsAtReadTime(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let t = try await db.set("a/1/first/x", [:]).commitTime
            try await db.set("a/1/later/y", [:])
            #expect(try await db.engine.listCollectionIds(db.database, parent: path("a/1"), consistency: .readTime(t)) == ["first"])
            #expect(try await db.engine.listCollectionIds(db.database, parent: path("a/1")) == ["first", "later"])
        }
    }
}
