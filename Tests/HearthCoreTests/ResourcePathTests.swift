import HearthCore
import Testing

@Suite("ResourcePath and DatabaseName")
struct ResourcePathTests {
    @Test("Documents have an even number of segments, collections an odd one")
    func kinds() {
        let doc = ResourcePath(parsing: "users/alice/posts/p1")
        #expect(doc.isDocument && !doc.isCollection)
        #expect(doc.collectionId == "posts")
        #expect(doc.parent.text == "users/alice/posts")
        #expect(doc.parent.isCollection)
        #expect(doc.lastSegment == "p1")
        #expect(ResourcePath(parsing: "").isRoot)
        #expect(ResourcePath(parsing: "").segments.isEmpty)
        #expect(!ResourcePath.root.isDocument && !ResourcePath.root.isCollection)
        #expect(ResourcePath(parsing: "users").appending("bob").text == "users/bob")
        #expect(ResourcePath(parsing: "users").isPrefix(of: doc))
        #expect(!ResourcePath(parsing: "user").isPrefix(of: doc))
    }

    @Test(
        "Accepts valid ids",
        arguments: [
            "users/alice", "users/__", "users/___", "users/_x_", "users/__x", "users/x__", "users/a.b", "users/...",
            "users/\u{1F600}", "users/" + String(repeating: "x", count: 1500), "users/" + String(repeating: "\u{E9}", count: 750),
        ])
    func valid(_ text: String) throws {
        try ResourcePath(parsing: text).validate()
    }

    @Test(
        "Rejects empty, reserved and oversized ids",
        arguments: [
            "users//alice", "users/", "/users", "users/.", "users/..", "./a", "users/__x__", "users/____", "__x__/a",
            "users/" + String(repeating: "x", count: 1501), "users/" + String(repeating: "\u{E9}", count: 751),
        ])
    func invalid(_ text: String) {
        do {
            try ResourcePath(parsing: text).validate()
            Issue.record("\(text.prefix(60)) should be invalid")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("Paths order segment by segment, by UTF-8")
    func ordering() {
        let ordered = ["a/b", "a/b/c/d", "a/c", "a-/b", "a0/b", "\u{FFFF}/a", "\u{1F600}/a"].map(ResourcePath.init(parsing:))
        for i in ordered.indices {
            for j in ordered.indices { #expect((ordered[i] < ordered[j]) == (i < j), "\(ordered[i]) < \(ordered[j])") }
        }
    }

    @Test("Database names resolve document names")
    func databaseNames() throws {
        let db = DatabaseName(project: "p", database: "(default)")
        #expect(db.text == "projects/p/databases/(default)")
        #expect(db.name(of: .root) == "projects/p/databases/(default)/documents")
        #expect(db.name(of: ResourcePath(parsing: "a/b")) == "projects/p/databases/(default)/documents/a/b")
        #expect(try db.path(fromName: "projects/p/databases/(default)/documents").isRoot)
        #expect(try db.documentPath(fromName: "projects/p/databases/(default)/documents/a/b").text == "a/b")
        for bad in [
            "projects/q/databases/(default)/documents/a/b", "projects/p/databases/(default)/documentsx/a/b",
            "projects/p/databases/(default)/documents//b", "projects/p/databases/(default)/documents/a/__b__",
        ] {
            #expect(throws: HearthError.self, "\(bad)") { try db.path(fromName: bad) }
        }
        #expect(throws: HearthError.self) { try db.documentPath(fromName: "projects/p/databases/(default)/documents/a") }
    }
}
