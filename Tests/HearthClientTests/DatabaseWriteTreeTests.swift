import Foundation
import Testing

import HearthClientCore
@testable import HearthClientDatabase

/// Latency compensation's pure parts: the write tree laid over the server's data, what a
/// location shows without complete data, and server values resolved locally.
@Suite struct DatabaseWriteTreeTests {
    func node(_ json: String) throws -> DatabaseNode { DatabaseNode(json: try DatabaseJSON.parse(json)) }
    func text(_ node: DatabaseNode) -> String { node.exportJSON().serialized() }
    func set(_ path: String, _ json: String) throws -> DatabaseWriteTree.Overwrite {
        DatabaseWriteTree.Overwrite(path: DatabaseValues.segments(path), node: try node(json))
    }

    @Test func writesOverServerDataInOrderAtAboveAndBelow() throws {
        var tree = DatabaseWriteTree()
        let server = try node(#"{"a":1,"b":{"c":2}}"#)
        let first = tree.add([try set("list/b/c", "3")])
        let second = tree.add([try set("list/d", #""x""#), try set("list/a", "null")])  // an update: two children
        let third = tree.add([try set("list", #"{"z":true}"#)])
        tree.remove(third)
        #expect(text(tree.overlay(server, at: ["list"])) == #"{"b":{"c":3},"d":"x"}"#)
        // a location below a write sees the write's child; a write above replaces everything
        #expect(text(tree.overlay(.empty, at: ["list", "b"])) == #"{"c":3}"#)
        let fourth = tree.add([try set("list", #"{"z":true}"#)])
        #expect(text(tree.overlay(server, at: ["list"])) == #"{"z":true}"#)
        #expect(text(tree.overlay(server, at: ["list", "b"])) == "null")
        #expect(text(tree.overlay(server, at: ["list"], excluding: [fourth])) == #"{"b":{"c":3},"d":"x"}"#)
        // acknowledged or refused: out of the tree; unrelated paths are untouched
        #expect(tree.remove(second)?.overwrites.count == 2)
        #expect(tree.remove(second) == nil)
        #expect(tree.touches(["list", "q"]))
        #expect(!tree.touches(["other"]))
        tree.remove(fourth)
        tree.remove(first)
        #expect(tree.isEmpty)
        #expect(tree.overlay(server, at: ["list"]) == server)
    }

    @Test func hiddenTransactionsCountOnlyForTheNextRun() throws {
        var tree = DatabaseWriteTree()
        tree.add([try set("counter", "6")], visible: false)
        let five = try node("5")
        #expect(text(tree.view(server: five, at: ["counter"]).node) == "5")
        #expect(text(tree.overlay(five, at: ["counter"], includeHidden: true)) == "6")
        #expect(!tree.touches(["counter"]))
    }

    @Test func viewsWithoutCompleteServerData() throws {
        var tree = DatabaseWriteTree()
        // children set whole are known (child events only); deeper writes into unknown children are not
        tree.add([try set("list/a", #"{"n":1}"#)])
        tree.add([try set("list/b/n", "2")])
        tree.add([try set("list/a/m", "true")])
        tree.add([try set("list/.priority", "1")])
        var view = tree.view(server: nil, at: ["list"])
        #expect(!view.complete)
        #expect(text(view.node) == #"{"a":{"m":true,"n":1}}"#)
        // a child known to be removed stays out
        tree.add([try set("list/a", "null")])
        view = tree.view(server: nil, at: ["list"])
        #expect(!view.complete && view.node.isEmpty)
        // a write at or above the location makes it complete, later writes apply over it
        tree.add([try set("", #"{"list":{"x":1}}"#)])
        tree.add([try set("list/y", "2")])
        view = tree.view(server: nil, at: ["list"])
        #expect(view.complete)
        #expect(text(view.node) == #"{"x":1,"y":2}"#)
        // data acknowledged before the server's data came counts as a write under the others
        let empty = DatabaseWriteTree()
        let acked = empty.view(server: nil, at: ["list"], before: [try set("list", #"{"k":1}"#)])
        #expect(acked.complete && text(acked.node) == #"{"k":1}"#)
        // with the server's data, acknowledged data is not needed (the server's holds it)
        let server = try node(#"{"s":1}"#)
        #expect(empty.view(server: server, at: ["list"]).node == server)
    }

    @Test func serverValuesResolvedLocally() throws {
        let now = 1_700_000_000_123.7
        let existing = try node(#"{"views":41,"name":"x"}"#)
        let json = try DatabaseJSON.parse(
            #"{"at":{".sv":"timestamp"},"views":{".sv":{"increment":1}},"name":{".sv":{"increment":2.5}},"list":[{".sv":"timestamp"}],"keep":{"a":1}}"#)
        let resolved = DatabaseServerValues.resolve(json, existing: existing, now: now)
        #expect(resolved.serialized() == #"{"at":1700000000123,"views":42,"name":2.5,"list":[1700000000123],"keep":{"a":1}}"#)
        #expect(DatabaseServerValues.resolve(try DatabaseJSON.parse(#"{".sv":"timestamp"}"#), existing: .empty, now: now) == .number(1_700_000_000_123))
        // an unknown placeholder is left for the server to refuse
        let unknown = try DatabaseJSON.parse(#"{".sv":"nonsense"}"#)
        #expect(DatabaseServerValues.resolve(unknown, existing: .empty, now: now) == unknown)
    }
}
