// One `import HearthClient` gives every service of the client SDK; apps that use only some
// import the service modules themselves (`import HearthClientAuth`) and build only those.
@_exported import HearthClientCore
@_exported import HearthClientAuth
@_exported import HearthClientStorage
@_exported import HearthClientFirestore
@_exported import HearthClientDatabase
