# frozen_string_literal: true

module ThriftNative
  # What ThriftNative.explain answers for one protocol object: the path its struct reads and writes and its own reads
  # and writes take right now, and why where it is not the fast one.
  #
  #   puts ThriftNative.explain(protocol)
  #   ThriftNative.explain(protocol).fast?   # structs natively, reads and writes in place
  #
  # protocol, transport: the objects examined (a decorator that only passes the calls on is seen through); structs,
  # reads, writes: one line each; notes: why a path is not the fast one.
  Explanation = Struct.new(:protocol, :transport, :structs, :reads, :writes, :notes, :fast, keyword_init: true) do
    def fast? = fast

    def to_s
      lines = ["#{protocol.class} over #{transport.class}: #{fast ? "fast" : "not all of it fast"}",
               "  structs: #{structs}", "  reads:   #{reads}", "  writes:  #{writes}"]
      lines.concat(notes.map { |n| "  - #{n}" })
      lines.join("\n")
    end
  end

  # The protocol classes whose methods and struct paths thrift_native serves, most specific first.
  SERVED_PROTOCOLS = %w[BinaryProtocolAccelerated BinaryProtocol CompactProtocol JsonProtocol HeaderProtocol].freeze
  # The transports whose bytes are read or written in place, and what of them.
  IN_PLACE = {
    "@buf" => "buffer (@buf)", "@rbuf" => "read buffer (@rbuf), refilled by its own methods",
    "@wbuf" => "write buffer (@wbuf)", "@inbuf" => "response (@inbuf, a StringIO)",
    "@outbuf" => "request buffer (@outbuf)", "@input" => "input (@input, a StringIO)",
    "@output" => "output (@output, a StringIO)", "@read_buffer" => "frame (@read_buffer, a StringIO)",
    "@write_buffer" => "frame (@write_buffer, a StringIO)"
  }.freeze
  KNOWN_TRANSPORTS = %w[MemoryBufferTransport FramedTransport BufferedTransport HTTPClientTransport IOStreamTransport
                        HeaderTransport].freeze
  private_constant :SERVED_PROTOCOLS, :IN_PLACE, :KNOWN_TRANSPORTS

  class << self
    # Which path `protocol`'s struct reads and writes, and its own reads and writes, take (an Explanation; `puts` it).
    def explain(protocol)
      facts = __send__(:explain_facts, protocol)
      through = facts[:through]
      trans = facts[:transport]
      notes = []
      notes << "seen through #{protocol.class}, which only passes the calls on to #{through.class}" unless through.equal?(protocol)
      served = protocol_note(through, facts, notes)
      places = { reads: facts[:reads], writes: facts[:writes] }
      limited = []
      if served && through.instance_of?(Thrift::JsonProtocol)
        # JsonProtocol's own methods read in place from a memory buffer or a Framed/Buffered read buffer, and write
        # in place into a memory buffer; its structs wherever the transport lends its buffer.
        limited << :reads if places[:reads] && !%w[@buf @rbuf].include?(places[:reads])
        limited << :writes if places[:writes] && places[:writes] != "@buf"
        limited.each { |which| places[which] = nil }
        notes << "JsonProtocol's own methods read in place only from a MemoryBufferTransport or a Framed/BufferedTransport's " \
                 "read buffer, and write in place only into a MemoryBufferTransport" unless limited.empty?
      end
      reads, writes = %i[reads writes].map do |which|
        side(trans, places[which], served, which, limited.include?(which) ? [] : notes)
      end
      structs = if facts[:structs]
                  "natively, whole (#{facts[:structs]}), #{facts[:reads] && facts[:writes] ? "in the transport's buffers" : "where the transport lends its buffer, else through its methods"}"
                else
                  "one call of the protocol's methods per value (dispatch)"
                end
      fast = !facts[:structs].nil? && !places[:reads].nil? && !places[:writes].nil? && served
      Explanation.new(protocol: through, transport: trans, structs: structs, reads: reads, writes: writes,
                      notes: notes.uniq, fast: fast)
    end

    private

    def thrift_class(name) = Thrift.const_defined?(name, false) ? Thrift.const_get(name, false) : nil

    # Whether `prot`'s own methods are served natively; says why not in `notes`.
    def protocol_note(prot, facts, notes)
      base = SERVED_PROTOCOLS.filter_map { |n| thrift_class(n) }.find { |k| prot.is_a?(k) }
      unless base
        notes << "#{prot.class} is not a protocol thrift_native serves: structs call its methods per value"
        return false
      end
      klass = prot.class
      if klass != base
        own = klass.ancestors.take_while { |a| a != base }.flat_map { |m| m.instance_methods(false) + m.private_instance_methods(false) }
        notes << "#{klass} is a subclass of #{base}: only exact instances are served natively" \
                 "#{own.empty? ? "" : " (it defines #{own.uniq.sort.join(", ")})"}"
        return false
      end
      unless prot.singleton_methods.empty?
        notes << "the protocol has singleton methods (#{prot.singleton_methods.sort.join(", ")}): only plain instances are served natively"
        return false
      end
      replaced = replaced_methods.grep(/\A#{Regexp.escape(base.name)}#/)
      unless replaced.empty?
        notes << "methods of #{base} were redefined (#{replaced.join(", ")}): they run as Ruby"
        return false
      end
      if base == Thrift::BinaryProtocol && facts[:plain_binary]
        notes << "Thrift::BinaryProtocol keeps its Ruby methods: #{facts[:plain_binary]}"
        return false
      end
      true
    end

    # One side (reads or writes) of the protocol over `trans`, in words; says why it is not in place in `notes`.
    def side(trans, place, served, which, notes)
      verb = which == :reads ? "reads" : "writes"
      return "through the protocol's Ruby methods" unless served
      return "in place, #{which == :reads ? "from" : "into"} #{trans.class}'s #{IN_PLACE.fetch(place)}" if place

      notes << transport_note(trans, which)
      "through #{trans.class}'s Ruby methods (#{which == :reads ? "read_byte, read_into_buffer, read_all" : "write"}), " \
        "the protocol's own #{verb} natively"
    end

    def transport_note(trans, which)
      known = KNOWN_TRANSPORTS.filter_map { |n| thrift_class(n) }.find { |k| trans.is_a?(k) }
      return "#{trans.class} is a transport no fast path reads or writes in place" unless known
      return "#{trans.class} is a subclass of #{known}: only exact instances are read and written in place" if trans.class != known
      return "the transport has singleton methods: only plain instances are read and written in place" unless trans.singleton_methods.empty?

      ivar = ->(name) { trans.instance_variable_get(name) }
      case known.name
      when "Thrift::HTTPClientTransport"
        if which == :reads
          inbuf = ivar.call(:@inbuf)
          return "no response yet (@inbuf is nil): read in place once `flush` has one" if inbuf.nil?
          return "its response (@inbuf, #{inbuf.class}) is not a StringIO" unless inbuf.instance_of?(StringIO)
        end
      when "Thrift::IOStreamTransport"
        io = ivar.call(which == :reads ? :@input : :@output)
        unless io.instance_of?(StringIO)
          return "its #{which == :reads ? "input" : "output"} (#{io.class}) is not a StringIO: its calls are kept"
        end
        return "its output StringIO is not at its end: writes go through StringIO#write" if which == :writes && io.pos != io.string.bytesize
      when "Thrift::FramedTransport"
        flag = which == :reads ? :@read : :@write
        return "its #{flag} is false: #{which} go to the transport beneath, through its methods" unless ivar.call(flag)
      end
      replaced = replaced_methods.grep(/\A#{Regexp.escape(known.name)}#/)
      return "methods of #{known} were redefined (#{replaced.join(", ")})" unless replaced.empty?

      "#{known} is not #{which == :reads ? "read" : "written"} in place now: a method it relies on was redefined, " \
        "it is frozen or closed, or its ivars are not what the library keeps there"
    end
  end
end
