package eddy.bridge;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Serializable;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;

/** Where the group's bridge listens, and how a connection introduces itself to it. */
final class BridgeAddress implements Serializable {
  private static final long serialVersionUID = 1L;
  static final ObjectMapper JSON = new ObjectMapper();

  final String host;
  final int port;
  final String token;
  final String start;

  BridgeAddress(Map<String, String> options) {
    this.host = options.getOrDefault("host", "127.0.0.1");
    this.port = Integer.parseInt(options.get("port"));
    this.token = options.get("token");
    this.start = options.get("start");
  }

  /** Opens a connection and sends its request: one JSON line with the bridge's token. */
  Socket open(Map<String, Object> request) throws IOException {
    Socket socket = new Socket();
    socket.setTcpNoDelay(true);
    socket.connect(new InetSocketAddress(host, port), 30_000);
    Map<String, Object> line = new LinkedHashMap<>(request);
    line.put("token", token);
    OutputStream out = socket.getOutputStream();
    out.write(JSON.writeValueAsBytes(line));
    out.write('\n');
    out.flush();
    return socket;
  }

  /** A request answered by one JSON line. */
  String ask(Map<String, Object> request) throws IOException {
    try (Socket socket = open(request)) {
      BufferedReader in = new BufferedReader(
          new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      String answer = in.readLine();
      if (answer == null) {
        throw new IOException("the eddy bridge closed the connection without an answer");
      }
      return answer;
    }
  }
}
