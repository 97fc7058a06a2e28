//! Every method, ivar and constant name the extension calls, reads or writes, each declared (and interned) once.

use crate::ruby::rb::define_rb_intern;

// Instance variables of the transports and protocols (real ivars: Ruby code reads them too).
define_rb_intern!(
    IVAR_TRANS => "@trans",
    IVAR_BUF => "@buf",
    IVAR_INDEX => "@index",
    IVAR_RBUF => "@rbuf",
    IVAR_STRICT_READ => "@strict_read",
    IVAR_STRICT_WRITE => "@strict_write",
    IVAR_LAST_FIELD => "@last_field",
    IVAR_BOOLEAN_FIELD => "@boolean_field",
    IVAR_BOOL_VALUE => "@bool_value",
    IVAR_RESET_MESSAGE_SIZE => "@reset_message_size",
    IVAR_INBUF => "@inbuf",
    IVAR_OUTBUF => "@outbuf",
    IVAR_INPUT => "@input",
    IVAR_OUTPUT => "@output",
);

// Instance variables of Thrift::JsonProtocol and its contexts.
define_rb_intern!(
    IVAR_CONTEXT => "@context",
    IVAR_CONTEXTS => "@contexts",
    IVAR_FIRST => "@first",
    IVAR_COLON => "@colon",
    IVAR_READER => "@reader",
    IVAR_HAS_DATA => "@hasData",
    IVAR_DATA => "@data",
);

// Instance variables of unions.
define_rb_intern!(
    IVAR_SETFIELD => "@setfield",
    IVAR_VALUE => "@value",
);

// The guard's look at a class's own methods (ruby/guard.rs).
define_rb_intern!(
    INSTANCE_METHOD => "instance_method",
    METHOD_DEFINED_P => "method_defined?",
    PRIVATE_METHOD_DEFINED_P => "private_method_defined?",
    BIND_CALL => "bind_call",
);

// Transport methods and ivars of FramedTransport and BufferedTransport.
define_rb_intern!(
    IVAR_TRANSPORT => "@transport",
    IVAR_WBUF => "@wbuf",
    IVAR_READ => "@read",
    IVAR_WRITE => "@write",
    READ => "read",
    UNPACK1 => "unpack1",
    GETBYTE => "getbyte",
    SETBYTE => "setbyte",
    SLICE => "slice",
    LENGTH => "length",
    SIZE => "size",
    WRITE => "write",
    FLUSH => "flush",
    CLOSE => "close",
    READ_BYTE => "read_byte",
    READ_INTO_BUFFER => "read_into_buffer",
    READ_ALL => "read_all",
    RESET_MESSAGE_SIZE => "reset_message_size",
);

// Thrift::Socket's ivars and the IO methods it calls (transports/socket.rs).
define_rb_intern!(
    IVAR_HANDLE => "@handle",
    IVAR_TIMEOUT => "@timeout",
    IVAR_DESC => "@desc",
    CLOSED_P => "closed?",
    READPARTIAL => "readpartial",
    READ_NONBLOCK => "read_nonblock",
    WRITE_NONBLOCK => "write_nonblock",
    READ_NONBLOCK_INNER => "__read_nonblock",
    WRITE_NONBLOCK_INNER => "__write_nonblock",
    MESSAGE => "message",
    RAISE => "raise",
    APPEND => "<<",
);

// Thrift::Client's ivars, the methods its methods call, and the operators they apply (rpc/client.rs).
define_rb_intern!(
    IVAR_IPROT => "@iprot",
    IVAR_OPROT => "@oprot",
    IVAR_SEQID => "@seqid",
    IVAR_PENDING_SEQIDS => "@pending_seqids",
    WRITE_MESSAGE_BEGIN => "write_message_begin",
    WRITE_MESSAGE_END => "write_message_end",
    READ_MESSAGE_BEGIN => "read_message_begin",
    READ_MESSAGE_END => "read_message_end",
    SEND_MESSAGE_ARGS => "send_message_args",
    WRITE_MESSAGE => "write_message",
    HANDLE_EXCEPTION => "handle_exception",
    NEXT_SEQID => "next_seqid!",
    DEQUEUE_PENDING_SEQID => "dequeue_pending_seqid",
    RAISE_APPLICATION_EXCEPTION => "raise_application_exception",
    TRANS => "trans",
    SEND => "send",
    SHIFT => "shift",
    EACH_ID => "each",
    EQ => "==",
    NOT_EQ => "!=",
    PLUS => "+",
    IVAR_LOGGER => "@logger",
    RESPOND_TO_P => "respond_to?",
    WRITE_ERROR => "write_error",
    BACKTRACE => "backtrace",
    JOIN => "join",
    DEBUG => "debug",
);

// Thrift::MultiplexedProcessor's ivars and the methods its process calls (rpc/multiplexed.rs).
define_rb_intern!(
    IVAR_DEFAULT_PROCESSOR => "@default_processor",
    PROCESS => "process",
    PROCESSOR => "processor",
    CHECK_TYPE => "check_type",
    CHECK_SEPARATOR => "check_separator",
    CHECK_DEFAULT_PROCESSOR => "check_default_processor",
    COUNT => "count",
    SPLIT => "split",
    LESS_THAN => "<",
    COMPARE_BY_IDENTITY_P => "compare_by_identity?",
);

// HeaderTransport's ivars and the StringIO methods it uses.
define_rb_intern!(
    IVAR_READ_BUFFER => "@read_buffer",
    IVAR_WRITE_BUFFER => "@write_buffer",
    IVAR_CLIENT_TYPE => "@client_type",
    IVAR_PROTOCOL_ID => "@protocol_id",
    IVAR_ALLOWED_CLIENT_TYPES => "@allowed_client_types",
    IVAR_READ_HEADERS => "@read_headers",
    IVAR_WRITE_HEADERS => "@write_headers",
    IVAR_WRITE_TRANSFORMS => "@write_transforms",
    IVAR_SEQUENCE_ID => "@sequence_id",
    IVAR_FLAGS => "@flags",
    IVAR_MAX_FRAME_SIZE => "@max_frame_size",
    IVAR_MAX_DECOMPRESSED_SIZE => "@max_decompressed_size",
    IVAR_UNFRAMED_BYTES_READ => "@unframed_bytes_read",
    IVAR_HEADER_TRANSPORT => "@header_transport",
    IVAR_PROTOCOL => "@protocol",
    IVAR_SERVICE_NAME => "@service_name",
    IVAR_MESSAGE_BEGIN => "@message_begin",
    IVAR_ACTUAL_PROCESSORS => "@actual_processors",
    INCLUDE_P => "include?",
    EOF_P => "eof?",
    CLOSED_READ_P => "closed_read?",
    CLOSED_WRITE_P => "closed_write?",
    STRING => "string",
    POS => "pos",
    SET_POS => "pos=",
    BOUNDED_INFLATE => "bounded_inflate",
    DEFLATE => "deflate",
);

// Thrift::Bytes.
define_rb_intern!(
    FORCE_BINARY_ENCODING => "force_binary_encoding",
    CONVERT_TO_UTF8_BYTE_BUFFER => "convert_to_utf8_byte_buffer",
    CONVERT_TO_STRING => "convert_to_string",
);

// Protocol methods the struct codec's dispatch path calls.
define_rb_intern!(
    READ_STRUCT_BEGIN => "read_struct_begin",
    READ_STRUCT_END => "read_struct_end",
    READ_FIELD_BEGIN => "read_field_begin",
    READ_FIELD_END => "read_field_end",
    READ_MAP_BEGIN => "read_map_begin",
    READ_MAP_END => "read_map_end",
    READ_LIST_BEGIN => "read_list_begin",
    READ_LIST_END => "read_list_end",
    READ_SET_BEGIN => "read_set_begin",
    READ_SET_END => "read_set_end",
    READ_BOOL => "read_bool",
    READ_I16 => "read_i16",
    READ_I32 => "read_i32",
    READ_I64 => "read_i64",
    READ_DOUBLE => "read_double",
    READ_STRING => "read_string",
    READ_BINARY => "read_binary",
    READ_UUID => "read_uuid",
    SKIP => "skip",
    VALIDATE_CONTAINER_SIZE => "validate_container_size",
    WRITE_STRUCT_BEGIN => "write_struct_begin",
    WRITE_STRUCT_END => "write_struct_end",
    WRITE_FIELD_BEGIN => "write_field_begin",
    WRITE_FIELD_END => "write_field_end",
    WRITE_FIELD_STOP => "write_field_stop",
    WRITE_MAP_BEGIN => "write_map_begin",
    WRITE_MAP_END => "write_map_end",
    WRITE_LIST_BEGIN => "write_list_begin",
    WRITE_LIST_END => "write_list_end",
    WRITE_SET_BEGIN => "write_set_begin",
    WRITE_SET_END => "write_set_end",
    WRITE_BOOL => "write_bool",
    WRITE_BYTE => "write_byte",
    WRITE_I16 => "write_i16",
    WRITE_I32 => "write_i32",
    WRITE_I64 => "write_i64",
    WRITE_DOUBLE => "write_double",
    WRITE_STRING => "write_string",
    WRITE_BINARY => "write_binary",
    WRITE_UUID => "write_uuid",
);

// The Hash that a set.rb Set (Ruby before 4.0) keeps its elements in; what a core Set's fast walk relies on (4.0).
#[cfg(ruby_lt_4_0)]
define_rb_intern!(IVAR_HASH => "@hash");
#[cfg(ruby_gte_4_0)]
define_rb_intern!(EACH => "each");

// Methods of structs, unions and the objects they hold.
define_rb_intern!(
    VALIDATE => "validate",
    NEW => "new",
    ADD => "add",
    ENTRIES => "entries",
    KEYS => "keys",
    DUP => "dup",
    NAME_TO_ID => "name_to_id",
    OWNER => "owner",
    TYPE_CHECKING => "type_checking",
    IVAR_TYPE_CHECKING => "@type_checking",
    FIELDS_WITH_DEFAULT_VALUES => "fields_with_default_values",
    IVAR_FIELDS_WITH_DEFAULT_VALUES => "@fields_with_default_values",
    IVAR_NAMES_TO_IDS => "@names_to_ids",
    TO_S => "to_s",
    FIELDS => "FIELDS",
);
