/** Prints N lines ("line <i> of the output verification bench") with System.out.println. */
public class Lines {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        for (int i = 0; i < n; i++) {
            System.out.println("line " + i + " of the output verification bench");
        }
    }
}
