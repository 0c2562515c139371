// The values every store shares (metadata, object keys, blob identifiers, store errors) are
// the log layer's vocabulary too: whoever imports the log layer has them.
@_exported import ObjectLogValues
