import GRDB
import Hummingbird
import AsyncHTTPClient
import ArgumentParser
print("hearth")
