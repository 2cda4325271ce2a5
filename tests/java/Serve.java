import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An HTTP server on the port given, serving data.txt with a clock value until a signal
 * stops it (a shutdown hook says how many it served). With "plain", a blocking ServerSocket
 * that serves two connections a line each and ends by itself.
 */
public class Serve {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        if (args.length > 1 && args[1].equals("plain")) {
            try (java.net.ServerSocket ss = new java.net.ServerSocket(port)) {
                System.out.println("listening");
                for (int i = 0; i < 2; i++) {
                    try (java.net.Socket s = ss.accept()) {
                        String line = new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream())).readLine();
                        String file = new String(Files.readAllBytes(Paths.get("data.txt"))).trim();
                        System.out.println("got " + line + " file=" + file + " from " + s.getInetAddress().getHostAddress() + " t=" + System.currentTimeMillis());
                        s.getOutputStream().write(("echo " + line + "\n").getBytes());
                    }
                }
            }
            System.out.println("done");
            return;
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        AtomicInteger n = new AtomicInteger();
        server.createContext("/", ex -> {
            String file = new String(Files.readAllBytes(Paths.get("data.txt"))).trim();
            byte[] body = ("hello " + ex.getRequestURI() + " file=" + file + " n=" + n.incrementAndGet() + "\n").getBytes();
            System.out.println(ex.getRequestMethod() + " " + ex.getRequestURI() + " t=" + System.currentTimeMillis());
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(body);
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("bye after " + n.get())));
        server.start();
        System.out.println("listening");
    }
}
